//! `deploy/argocd/`: the Argo CD health checks (Lua, in Argo CD's
//! `resource_customizations/<group>/<Kind>/` layout) say what each case of
//! their `health_test.yaml` expects, run by a real Lua interpreter
//! (`lua5.4`, dev/prerequisites.sh) the way Argo CD runs them: the object
//! as the global `obj`, a table `{status, message}` back.
//!
//! No cluster: the objects are the `testdata/` files, each saying in its
//! first comment how it was obtained.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use serde_json::Value;

/// The Lua interpreter the checks run in.
const LUA: &str = "lua5.4";

/// Where the kinds' folders are.
fn customizations() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/argocd/resource_customizations")
}

/// Every `<group>/<Kind>` folder.
fn kinds() -> Vec<PathBuf> {
    let mut kinds = Vec::new();
    for group in std::fs::read_dir(customizations()).expect("deploy/argocd/resource_customizations")
    {
        let group = group.unwrap().path();
        for kind in std::fs::read_dir(&group).unwrap() {
            let kind = kind.unwrap().path();
            if kind.is_dir() {
                kinds.push(kind);
            }
        }
    }
    kinds.sort();
    kinds
}

#[derive(Deserialize)]
struct HealthTests {
    tests: Vec<HealthTest>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HealthTest {
    health_status: Health,
    input_path: String,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Health {
    status: String,
    message: String,
}

/// `value` as a Lua table constructor, as Argo CD hands an object to Lua
/// (objects as tables by key, arrays from 1, null as nil).
fn lua(value: &Value) -> String {
    match value {
        Value::Null => "nil".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => format!("{:?}", n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => lua_string(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(lua).collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(key, value)| format!("[{}] = {}", lua_string(key), lua(value)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
    }
}

/// A Lua string literal: quotes, backslashes and control bytes escaped
/// (decimal escapes, which every Lua reads).
fn lua_string(text: &str) -> String {
    let mut literal = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => literal.push_str("\\\""),
            '\\' => literal.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                literal.push_str(&format!("\\{:03}", c as u32));
            }
            c => literal.push(c),
        }
    }
    literal.push('"');
    literal
}

/// Runs `script` with `object` as `obj`, as Argo CD does.
fn health(script: &Path, object: &Value) -> Health {
    let program = format!(
        "obj = {}\nlocal hs = dofile({})\nio.write(hs.status, \"\\n\", hs.message or \"\")\n",
        lua(object),
        lua_string(&script.display().to_string()),
    );
    let mut child = Command::new(LUA)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| {
            panic!("running {LUA}: {error}; install it with dev/prerequisites.sh")
        });
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(program.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let (status, message) = text.split_once('\n').unwrap_or((&text, ""));
    Health {
        status: status.to_owned(),
        message: message.to_owned(),
    }
}

#[test]
fn every_case_of_every_health_test_yields_what_it_expects() {
    let kinds = kinds();
    let names: Vec<String> = kinds
        .iter()
        .map(|kind| {
            kind.strip_prefix(customizations())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "core.pakket.dev/Instance",
            "operators.pakket.dev/Operator",
            "packages.pakket.dev/ClusterPackage",
            "packages.pakket.dev/Package",
        ]
    );
    let mut failures = Vec::new();
    let mut cases = 0;
    for kind in &kinds {
        let script = kind.join("health.lua");
        let tests: HealthTests = serde_saphyr::from_str(
            &std::fs::read_to_string(kind.join("health_test.yaml")).unwrap(),
        )
        .unwrap_or_else(|error| panic!("{}/health_test.yaml: {error}", kind.display()));
        let mut tested = Vec::new();
        for test in tests.tests {
            let path = kind.join(&test.input_path);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let object: Value = serde_saphyr::from_str(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let got = health(&script, &object);
            if got != test.health_status {
                failures.push(format!(
                    "{}: expected {:?}, got {got:?}",
                    path.display(),
                    test.health_status
                ));
            }
            tested.push(test.input_path);
            cases += 1;
        }
        // Every object kept is a case, and says where it came from.
        for file in std::fs::read_dir(kind.join("testdata")).unwrap() {
            let file = file.unwrap().path();
            let relative = format!("testdata/{}", file.file_name().unwrap().to_string_lossy());
            assert!(
                tested.contains(&relative),
                "{} is no case of health_test.yaml",
                file.display()
            );
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                text.starts_with("# Captured") || text.starts_with("# Hand-"),
                "{} does not say how it was obtained (a first comment: `# Captured ...` or `# Hand-...`)",
                file.display()
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(cases >= 20, "only {cases} cases");
}

/// The part between `-- kstatus: begin` and `-- kstatus: end`.
fn kstatus_part(script: &Path) -> String {
    let text = std::fs::read_to_string(script).unwrap();
    let start = text
        .find("-- kstatus: begin")
        .unwrap_or_else(|| panic!("{} has no kstatus part", script.display()));
    let end = text.find("-- kstatus: end").unwrap();
    text[start..end].to_owned()
}

#[test]
fn the_scripts_read_kstatus_alike() {
    // Argo CD runs each script alone, so the kstatus reading is copied in
    // each; it must stay one reading.
    let parts: Vec<(PathBuf, String)> = kinds()
        .into_iter()
        .map(|kind| {
            let script = kind.join("health.lua");
            let part = kstatus_part(&script);
            (script, part)
        })
        .collect();
    for (script, part) in &parts[1..] {
        assert_eq!(
            part,
            &parts[0].1,
            "{} reads kstatus unlike {}",
            script.display(),
            parts[0].0.display()
        );
    }
    let packages = customizations().join("packages.pakket.dev");
    assert_eq!(
        std::fs::read_to_string(packages.join("Package/health.lua")).unwrap(),
        std::fs::read_to_string(packages.join("ClusterPackage/health.lua")).unwrap(),
        "Package and ClusterPackage share one script"
    );
}

#[test]
fn objects_become_lua_tables() {
    let object = serde_json::json!({
        "a": [1, 2.5, null, true],
        "b": "say \"hi\"\n\\",
    });
    assert_eq!(
        lua(&object),
        r#"{["a"] = {1, 2.5, nil, true}, ["b"] = "say \"hi\"\010\\"}"#
    );
}
