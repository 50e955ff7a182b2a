use super::*;

type Decoded = (Vec<(Origin, Document)>, Vec<Diagnostic>);

fn run(text: &str, format: Format) -> Result<Decoded, CatalogError> {
    let file: Arc<Path> = Arc::from(Path::new("test"));
    let (mut documents, mut diagnostics) = (Vec::new(), Vec::new());
    decode(text, &file, format, &mut documents, &mut diagnostics)?;
    Ok((documents, diagnostics))
}

fn lines(documents: &[(Origin, Document)]) -> Vec<u32> {
    documents.iter().map(|(origin, _)| origin.line).collect()
}

#[test]
fn json_streams_may_concatenate_documents_with_or_without_whitespace() {
    let text = "{\"schema\":\"olm.package\",\"name\":\"a\"}{\"schema\":\"olm.package\",\"name\":\"b\"}\n\n  {\n\"schema\": \"olm.package\", \"name\": \"c\"}";
    let (documents, diagnostics) = run(text, Format::Json).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(lines(&documents), [1, 1, 3]);
}

#[test]
fn yaml_streams_give_each_document_its_line_and_skip_empty_ones() {
    let text = "---\nschema: olm.package\nname: a\n---\n---\nschema: olm.package\nname: b\n";
    let (documents, diagnostics) = run(text, Format::Yaml).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(lines(&documents), [2, 6]);
}

#[test]
fn a_json_syntax_error_names_the_file_line_and_column() {
    let text = "{\"schema\":\"olm.package\",\"name\":\"a\"}\n{\"schema\": \"olm.package\",\n \"name\": }\n";
    let error = run(text, Format::Json).unwrap_err();
    let CatalogError::Syntax { line, column, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!((*line, *column), (3, 10));
    let message = error.to_string();
    assert!(
        message.starts_with("test:3:10: invalid JSON: expected value"),
        "{message}"
    );
}

#[test]
fn a_yaml_syntax_error_names_the_file_line_and_column() {
    let text = "schema: olm.package\nname: a\n---\nschema: olm.channel\nentries: [a, b\n";
    let error = run(text, Format::Yaml).unwrap_err();
    let CatalogError::Syntax { line, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*line, 5);
    assert!(error.to_string().contains("invalid YAML"), "{error}");
    assert!(!error.to_string().contains(" at line "), "{error}");
}

#[test]
fn unknown_schemas_are_kept_aside_without_their_body() {
    let text = r#"{"schema":"olm.template.basic","name":"t","entries":"whatever"}"#;
    let (documents, diagnostics) = run(text, Format::Json).unwrap();
    assert!(diagnostics.is_empty());
    let [(_, Document::Other(other))] = documents.as_slice() else {
        panic!("{documents:?}");
    };
    assert_eq!(other.schema, "olm.template.basic");
    assert_eq!(other.name.as_deref(), Some("t"));
}

#[test]
fn documents_that_are_not_objects_or_lack_a_schema_are_diagnostics() {
    let text = "[1, 2]\n{\"name\": \"x\"}\n{\"schema\": 5}\n7";
    let (documents, diagnostics) = run(text, Format::Json).unwrap();
    assert!(documents.is_empty());
    let codes: Vec<_> = diagnostics
        .iter()
        .map(|d| (d.code, d.origin.line))
        .collect();
    assert_eq!(
        codes,
        [
            (DiagnosticCode::InvalidDocument, 1),
            (DiagnosticCode::InvalidDocument, 2),
            (DiagnosticCode::InvalidDocument, 3),
            (DiagnosticCode::InvalidDocument, 4),
        ]
    );
    assert!(
        diagnostics[1].object.contains("\"x\""),
        "{}",
        diagnostics[1]
    );
}

#[test]
fn a_field_of_the_wrong_type_names_the_field_and_its_line() {
    let text = "{\"schema\":\"olm.package\",\"name\":\"a\"}\n{\"schema\": \"olm.channel\", \"package\": \"a\", \"name\": \"alpha\",\n \"entries\": [{\"name\": \"a.v1\"},\n  {\"name\": \"a.v2\", \"skips\": \"a.v1\"}]}\n";
    let (documents, diagnostics) = run(text, Format::Json).unwrap();
    assert_eq!(documents.len(), 1);
    let [diagnostic] = diagnostics.as_slice() else {
        panic!("{diagnostics:?}");
    };
    assert_eq!(diagnostic.field.as_deref(), Some("entries[1].skips"));
    assert_eq!(diagnostic.origin.line, 4);
    assert_eq!(diagnostic.object, "olm.channel \"a/alpha\"");
    assert!(diagnostic.message.contains("invalid type"), "{diagnostic}");
}

#[test]
fn yaml_shape_errors_name_the_field_at_the_document_line() {
    let text = "schema: olm.bundle\nname: a.v1\npackage: a\nproperties:\n- type: olm.gvk\n---\nschema: olm.package\nname: [x]\n";
    let (documents, diagnostics) = run(text, Format::Yaml).unwrap();
    assert!(documents.is_empty());
    assert_eq!(diagnostics.len(), 2, "{diagnostics:?}");
    assert_eq!(diagnostics[0].field.as_deref(), Some("properties[0]"));
    assert!(
        diagnostics[0].message.contains("value"),
        "{}",
        diagnostics[0]
    );
    assert_eq!(diagnostics[1].origin.line, 7);
    assert_eq!(diagnostics[1].field.as_deref(), Some("name"));
}

#[test]
fn formats_come_from_extensions() {
    assert_eq!(
        Format::from_path(Path::new("a/catalog.json")),
        Some(Format::Json)
    );
    assert_eq!(
        Format::from_path(Path::new("catalog.YML")),
        Some(Format::Yaml)
    );
    assert_eq!(
        Format::from_path(Path::new("catalog.yaml")),
        Some(Format::Yaml)
    );
    assert_eq!(Format::from_path(Path::new("README.md")), None);
    assert_eq!(Format::from_path(Path::new("Dockerfile")), None);
}

#[test]
fn large_yaml_streams_fit_the_parser_budget() {
    // More documents than serde-saphyr's default budget (1024) allows.
    let mut text = String::new();
    for i in 0..1100 {
        text.push_str(&format!("---\nschema: olm.package\nname: p{i}\n"));
    }
    let (documents, diagnostics) = run(&text, Format::Yaml).unwrap();
    assert!(diagnostics.is_empty());
    assert_eq!(documents.len(), 1100);
}

#[test]
fn yaml_alias_bombs_are_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let previous = format!("*a{}", i - 1);
        let list = vec![previous.as_str(); 20].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{list}]\n"));
    }
    assert!(matches!(
        run(&text, Format::Yaml),
        Err(CatalogError::Syntax { .. })
    ));
}
