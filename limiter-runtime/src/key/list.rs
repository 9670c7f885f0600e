//! Key lists (`key = (tenant, user)`): each part written escaped ([`escape`](super::escape)) and the parts
//! joined with `:`, so that distinct lists are always distinct keys, before the key is bounded and after.

/// Key lists escape each part, so that distinct lists are distinct keys whatever the parts hold
/// (colons, percent signs, empty parts, parts past the length kept verbatim), before the key is bounded and
/// after.
#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use crate::__private::Part;
    use crate::key::{StoreKey, MAX_VERBATIM};

    fn part() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a:%3A]{0,6}",
            1 => "[ab:%]{120,140}",
            1 => Just(String::new()),
        ]
    }

    fn written(parts: &[String]) -> String {
        let key = match parts {
            [a, b] => StoreKey::new("p:", format_args!("{}:{}", Part(a), Part(b))),
            [a, b, c] => StoreKey::new("p:", format_args!("{}:{}:{}", Part(a), Part(b), Part(c))),
            _ => unreachable!("lists of two or three"),
        };
        key.into_string()
    }

    proptest! {
        #[test]
        fn distinct_lists_are_distinct_keys(
            lists in prop::collection::vec(prop::collection::vec(part(), 2..=3), 2..64),
        ) {
            let mut seen: HashMap<String, Vec<String>> = HashMap::new();
            for list in lists {
                let key = written(&list);
                prop_assert!(key.len() <= 2 + MAX_VERBATIM + 41, "not bounded: {}", key.len());
                if let Some(other) = seen.insert(key.clone(), list.clone()) {
                    prop_assert_eq!(&other, &list, "two lists, one key {:?}", key);
                }
            }
        }
    }

    #[test]
    fn the_classic_collisions_are_gone() {
        let lists = [["a", "b:c"], ["a:b", "c"], ["a%3Ab", "c"], ["a", "b%3Ac"]];
        let keys: Vec<String> = lists
            .iter()
            .map(|l| written(&l.map(str::to_owned)))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(key), "{key}");
        }
        // A list of plain parts: joined with `:`, which the store key escapes as any key's.
        assert_eq!(written(&["tenant".into(), "42".into()]), "p:tenant%3A42");
    }
}
