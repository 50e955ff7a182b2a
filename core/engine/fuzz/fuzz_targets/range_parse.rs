#![no_main]
//! Feeds arbitrary text to both range parsers (OLM and Glasskube syntax).
//! Neither may panic, and whatever parses must print a canonical form that
//! `Range::parse` reads back as the same set, and prints the same way.

use libfuzzer_sys::fuzz_target;
use pakket_engine::Range;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for parsed in [Range::parse(text), Range::parse_glasskube(text)] {
        let Ok(range) = parsed else {
            continue;
        };
        let printed = range.to_string();
        let again = Range::parse(&printed).unwrap_or_else(|error| {
            panic!("{text:?} printed as {printed:?}, which fails: {error}")
        });
        assert_eq!(again, range, "{text:?} printed as {printed:?}");
        assert_eq!(again.to_string(), printed, "{text:?}");
        // The canonical form is unique, so these rebuild the same list.
        assert_eq!(range.intersect(&range), range, "{text:?}");
        assert_eq!(range.union(&Range::none()), range, "{text:?}");
    }
});
