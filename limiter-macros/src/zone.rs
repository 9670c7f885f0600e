//! The time zone a literal `tz = "..."` names: looked up in the zone data the runtime bundles, spelled as
//! that data spells it, and, for a name it does not hold, the closest name it does (a slip's suggestion).

use syn::LitStr;

use crate::messages;

/// Resolves the zone's name `lit` holds against the zone data the runtime bundles: the name as the zone data
/// spells it, spanned at the literal, or an error there that says why it names no zone.
pub(crate) fn resolve(lit: &LitStr) -> syn::Result<LitStr> {
    let name = lit.value();
    match jiff::tz::db().get(&name) {
        // The name as the zone data spells it: `"europe/berlin"` is found, and is `"Europe/Berlin"`.
        Ok(zone) => Ok(LitStr::new(zone.iana_name().unwrap_or(&name), lit.span())),
        Err(_) => Err(syn::Error::new(
            lit.span(),
            messages::unknown_zone(&name, closest_zone),
        )),
    }
}

/// Finds the known zone whose name is closest to `name` (case aside), if it is a slip away: a few letters of
/// the whole name, or of its city alone (`"Berlin"` is `"Europe/Berlin"`'s).
fn closest_zone(name: &str) -> Option<String> {
    let wanted = name.to_ascii_lowercase().replace(' ', "_");
    // A slip: a letter in four, at most three.
    let close = |length: usize| (length / 4).clamp(1, 3);
    let mut best: Option<(usize, String)> = None;
    for known in jiff::tz::db().available() {
        let known = known.as_str();
        let lower = known.to_ascii_lowercase();
        let mut distance = edit_distance(&wanted, &lower);
        if !wanted.contains('/') {
            let city = lower.rsplit('/').next().unwrap_or(&lower);
            distance = distance.min(edit_distance(&wanted, city));
        }
        if distance <= close(wanted.chars().count())
            && best
                .as_ref()
                .is_none_or(|(shortest, _)| distance < *shortest)
        {
            best = Some((distance, known.to_owned()));
        }
    }
    best.map(|(_, known)| known)
}

/// Counts the letters inserted, removed or replaced to turn `a` into `b`: their Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(x != *y))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{closest_zone, edit_distance};

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("berln", "berlin"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    /// Checks that a slip is given the zone it meant, and a name like no zone's, nothing.
    #[test]
    fn close_zones_are_suggested() {
        let suggested = |name: &str| closest_zone(name);
        assert_eq!(suggested("Europe/Berln").as_deref(), Some("Europe/Berlin"));
        assert_eq!(
            suggested("America/New York").as_deref(),
            Some("America/New_York")
        );
        assert_eq!(suggested("Berlin").as_deref(), Some("Europe/Berlin"));
        assert_eq!(suggested("Mars/Olympus_Mons"), None);
        assert_eq!(suggested("x"), None);
    }
}
