//! `src/check` is the generic checker: it imports no world (`crate::model`, ...) and no file format
//! (`crate::spec`), only its own modules and crates. A `use crate::...` there fails this test.

use std::path::Path;

#[test]
fn the_checker_imports_no_world_and_no_file_format() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check");
    let mut files = 0;
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        files += 1;
        for (number, line) in text.lines().enumerate() {
            let outside = line.replace("pub(crate)", "").contains("crate::");
            assert!(
                !outside,
                "{}:{}: src/check reaches outside itself: {line}",
                path.display(),
                number + 1
            );
        }
    }
    assert!(files >= 10, "src/check holds the checker's modules");
}
