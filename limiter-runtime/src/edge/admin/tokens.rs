//! The admin door's credentials: an operator's bearer token and, if set, a viewer's, each kept as a digest
//! and compared in constant time.

use axum::http::{header, HeaderMap};

use super::Role;
use crate::Error;

/// The fewest characters a token has: 16 random hex digits are 64 bits, beyond guessing at any rate the door
/// admits.
pub(super) const SHORTEST: usize = 16;

/// A token's digest: what a request's token is compared with (digests are of one length, and comparing them
/// says nothing of the token's).
type Digest = [u8; 20];

/// The tokens the door knows, each with its role.
#[derive(Debug)]
pub(super) struct Tokens {
    operator: Digest,
    viewer: Option<Digest>,
}

impl Tokens {
    /// Creates the tokens from the operator's `operator` token and the viewer's `viewer`, each without the spaces
    /// around it; else why not (missing, too short, or one token for both roles).
    pub(super) fn new(operator: Option<&str>, viewer: Option<&str>) -> Result<Tokens, Error> {
        let refused = |role, reason: String| Error::InvalidAdminToken { role, reason };
        let checked = |role, token: &str| {
            let token = token.trim();
            let length = token.chars().count();
            match length >= SHORTEST {
                true => Ok(digest(token)),
                false => Err(refused(
                    role,
                    format!(
                        "it has {length} characters and a token needs at least {SHORTEST}, as the admin API \
                         changes limits for the whole service (make one with `openssl rand -hex 16`)"
                    ),
                )),
            }
        };
        let operator = match operator {
            Some(token) => checked("operator", token)?,
            None => {
                return Err(refused(
                    "operator",
                    "none was given, and the admin door needs one (`operator_token`)".to_owned(),
                ))
            }
        };
        let viewer = viewer.map(|token| checked("viewer", token)).transpose()?;
        if viewer == Some(operator) {
            return Err(refused(
                "viewer",
                "it is the operator's token, so a viewer would have the operator's powers"
                    .to_owned(),
            ));
        }
        Ok(Tokens { operator, viewer })
    }

    /// Returns the role of the token `given`, if it is one the door knows: both compared, in time that depends on
    /// neither.
    pub(super) fn role_of(&self, given: &str) -> Option<Role> {
        let given = digest(given);
        let operator = same(&given, &self.operator);
        let viewer = self.viewer.is_some_and(|viewer| same(&given, &viewer));
        match (operator, viewer) {
            (true, _) => Some(Role::Operator),
            (false, true) => Some(Role::Viewer),
            (false, false) => None,
        }
    }
}

fn digest(token: &str) -> Digest {
    sha1_smol::Sha1::from(token).digest().bytes()
}

/// Returns whether two digests are the same, in time that does not depend on where they differ.
fn same(a: &Digest, b: &Digest) -> bool {
    let differ = a.iter().zip(b).fold(0u8, |differ, (a, b)| differ | (a ^ b));
    // Read through a black box, so that the fold is not cut short.
    std::hint::black_box(differ) == 0
}

/// Returns the token a request brings in `Authorization: Bearer <token>`, if it brings one: the scheme matched in any
/// case (RFC 9110 §11.1: `bearer`, `BEARER`), the token without the spaces around it. `None` without the
/// header, with another scheme, or with no token after the scheme.
pub(super) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap, HeaderValue};

    use super::{bearer_token, Role, Tokens};
    use crate::Error;

    const OPERATOR: &str = "0123456789abcdef";
    const VIEWER: &str = "fedcba9876543210";

    #[test]
    fn each_token_has_its_role_and_no_other_token_has_one() {
        let tokens = Tokens::new(Some(OPERATOR), Some(VIEWER)).unwrap();
        assert_eq!(tokens.role_of(OPERATOR), Some(Role::Operator));
        assert_eq!(tokens.role_of(VIEWER), Some(Role::Viewer));
        for other in [
            "",
            "0123456789abcde",
            "0123456789abcdef ",
            "0123456789ABCDEF",
            "x",
        ] {
            assert_eq!(tokens.role_of(other), None, "{other:?}");
        }
        let alone = Tokens::new(Some(OPERATOR), None).unwrap();
        assert_eq!(alone.role_of(VIEWER), None);
    }

    #[test]
    fn short_missing_or_shared_tokens_are_refused_with_a_sentence() {
        let reason = |operator, viewer| match Tokens::new(operator, viewer) {
            Err(e @ Error::InvalidAdminToken { .. }) => e.to_string(),
            other => panic!("{other:?}"),
        };
        let short = reason(Some("0123456789abcde"), None);
        assert!(
            short.starts_with("the admin operator token is refused: it has 15 characters"),
            "{short}"
        );
        assert!(short.contains("openssl rand -hex 16"), "{short}");
        // Spaces around a token are not part of it.
        assert!(reason(Some("  0123456789abcde  "), None).contains("15 characters"));
        assert!(
            reason(Some(OPERATOR), Some("short")).starts_with("the admin viewer token is refused")
        );
        assert!(reason(None, Some(VIEWER)).contains("none was given"));
        let shared = reason(Some(OPERATOR), Some(" 0123456789abcdef"));
        assert!(shared.contains("the operator's powers"), "{shared}");
    }

    #[test]
    fn the_scheme_is_matched_in_any_case_and_the_token_read_without_its_spaces() {
        let token = |value: &str| {
            let mut headers = HeaderMap::new();
            let value = HeaderValue::from_str(value).unwrap();
            headers.insert(header::AUTHORIZATION, value);
            bearer_token(&headers).map(str::to_owned)
        };
        for value in [
            "Bearer s3cret",
            "bearer s3cret",
            "BEARER s3cret",
            "bEaReR   s3cret ",
        ] {
            assert_eq!(token(value).as_deref(), Some("s3cret"), "{value:?}");
        }
        for value in [
            "",
            "Bearer",
            "Bearer  ",
            "Basic s3cret",
            "s3cret",
            "Bearers3cret",
        ] {
            assert_eq!(token(value), None, "{value:?}");
        }
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
