//! The file on disk, and what a writer leaves of it: cut off mid-write, far too large, missing, a directory,
//! not UTF-8, an editor's swap file beside it.

use std::fs::{self, File};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{parse, FULL};
use crate::limits::disk::MOST_BYTES;
use crate::limits::error::Kind;
use crate::limits::LimitsFile;

/// A directory of its own for a test, made empty.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("limiter-limits-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks that the example cut off at every character either reads into policies the whole file has, or is
/// refused at a line and column within what is left of it: never a panic.
#[test]
fn a_file_cut_off_anywhere_reads_or_is_refused_with_a_position() {
    let whole = parse(FULL).unwrap();
    let names = |file: &LimitsFile| -> Vec<String> {
        let names = file.policies.iter().filter_map(|rule| rule.name.as_deref());
        names.map(str::to_owned).collect()
    };
    let all = names(&whole);
    let (mut read, mut refused) = (0, 0);
    for cut in (0..=FULL.len()).filter(|&cut| FULL.is_char_boundary(cut)) {
        let text = &FULL[..cut];
        match parse(text) {
            Ok(file) => {
                read += 1;
                let some = names(&file);
                assert!(
                    some.iter().all(|name| all.contains(name)),
                    "cut at {cut}: {some:?}"
                );
                assert_eq!(
                    some,
                    all[..some.len()],
                    "cut at {cut}: the policies in order"
                );
            }
            Err(error) => {
                refused += 1;
                let (line, column) = (error.line().unwrap(), error.column().unwrap());
                let lines = text.split('\n').count();
                assert!(line >= 1 && line <= lines, "cut at {cut}: {error}");
                let width = text.split('\n').nth(line - 1).unwrap().chars().count();
                assert!(column >= 1 && column <= width + 1, "cut at {cut}: {error}");
            }
        }
    }
    // Both outcomes happen: a cut between lines reads, one inside a key or a string does not.
    assert!(read > 50 && refused > 50, "{read} read, {refused} refused");
}

/// Checks that a file over 1 MiB is refused by its length, before it is read: a 10 MB one (sparse, so the
/// test writes nothing), and one just over the most.
#[test]
fn a_file_too_large_is_refused_unread() {
    let dir = scratch("large");
    let path = dir.join("limits.toml");
    File::create(&path).unwrap().set_len(10_000_000).unwrap();
    let error = LimitsFile::read(&path).unwrap_err();
    assert_eq!(error.kind(), Kind::TooLarge, "{error}");
    assert_eq!(error.line(), None);
    let said = format!(
        "{}: is 10000000 bytes or more, larger than a limits file may be",
        path.display()
    );
    assert!(error.to_string().starts_with(&said), "{error}");

    // At the most, it is read (and is no TOML: zeros); one byte more, it is not.
    File::create(&path).unwrap().set_len(MOST_BYTES).unwrap();
    assert_eq!(LimitsFile::read(&path).unwrap_err().kind(), Kind::Syntax);
    File::create(&path)
        .unwrap()
        .set_len(MOST_BYTES + 1)
        .unwrap();
    assert_eq!(LimitsFile::read(&path).unwrap_err().kind(), Kind::TooLarge);
    fs::remove_dir_all(&dir).unwrap();
}

/// Checks a missing file and a directory, each with its sentence.
#[test]
fn a_missing_file_or_a_directory_is_refused() {
    let dir = scratch("missing");
    let missing = dir.join("limits.toml");
    let error = LimitsFile::read(&missing).unwrap_err();
    assert_eq!(error.kind(), Kind::Io(ErrorKind::NotFound));
    assert_eq!(
        error.to_string(),
        format!(
            "{}: no such file: the limits file is missing",
            missing.display()
        )
    );
    let error = LimitsFile::read(&dir).unwrap_err();
    assert_eq!(error.kind(), Kind::Io(ErrorKind::IsADirectory));
    assert!(
        error
            .to_string()
            .ends_with("is a directory, not a limits file"),
        "{error}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// Checks that text that is not UTF-8 is refused at the line and column of its first bad byte.
#[test]
fn text_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = scratch("utf8");
    let path = dir.join("limits.toml");
    fs::write(&path, b"[policies.a]\nmessage = \"caf\xe9\"\n").unwrap();
    let error = LimitsFile::read(&path).unwrap_err();
    assert_eq!(error.kind(), Kind::NotUtf8);
    assert_eq!(
        (error.line(), error.column()),
        (Some(2), Some(15)),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("the file is not UTF-8 text (byte 27"),
        "{error}"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// Checks that only the path given is read: an editor's swap file beside it, half written, changes nothing.
#[test]
fn a_swap_file_beside_it_changes_nothing() {
    let dir = scratch("swap");
    let path = dir.join("limits.toml");
    fs::write(&path, FULL).unwrap();
    let alone = LimitsFile::read(&path).unwrap();
    fs::write(
        dir.join(".limits.toml.swp"),
        b"b0VIM 9.0\0\0\xff\xfe[policies.x]\nmax = 0\n",
    )
    .unwrap();
    fs::write(dir.join("limits.toml~"), "[policies.a]\nmaxx = 1\n").unwrap();
    assert_eq!(LimitsFile::read(&path).unwrap(), alone);
    assert_eq!(alone, parse(FULL).unwrap());
    fs::remove_dir_all(&dir).unwrap();
}

/// Checks that the error of a file read names it as it was given (relative here).
#[test]
fn the_path_is_named_as_given() {
    let error = LimitsFile::read(Path::new("no/such/limits.toml")).unwrap_err();
    assert_eq!(error.path(), Path::new("no/such/limits.toml"));
    assert!(
        error.to_string().starts_with("no/such/limits.toml: "),
        "{error}"
    );
}
