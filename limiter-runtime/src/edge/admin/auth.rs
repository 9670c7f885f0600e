//! The admin API's one credential: a bearer token, compared in constant time.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::api::error;
use super::Admin;

/// The token's digest: what a request's token is compared with (digests are of one length, and comparing
/// them says nothing of the token's).
pub(super) fn digest(token: &str) -> [u8; 20] {
    sha1_smol::Sha1::from(token).digest().bytes()
}

/// Whether `given` is the token whose digest is `expected`, in time that does not depend on where they
/// differ.
fn matches(given: &str, expected: &[u8; 20]) -> bool {
    let given = digest(given);
    let differ = given
        .iter()
        .zip(expected)
        .fold(0u8, |differ, (a, b)| differ | (a ^ b));
    // Read through a black box, so that the fold is not cut short.
    std::hint::black_box(differ) == 0
}

/// The token a request brings in `Authorization: Bearer <token>`, if it brings one: the scheme matched in any
/// case (RFC 9110 §11.1: `bearer`, `BEARER`), the token without the spaces around it. `None` without the
/// header, with another scheme, or with no token after the scheme.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Lets a request with the token (`Authorization: Bearer <token>`) through; answers 401 to any other, saying
/// whether it brought no bearer token or the wrong one.
pub(super) async fn bearer(State(admin): State<Admin>, request: Request, next: Next) -> Response {
    let why = match bearer_token(request.headers()) {
        Some(token) if matches(token, &admin.token) => return next.run(request).await,
        Some(_) => "wrong token: the bearer token given is not this admin API's",
        None => "a bearer token is required: Authorization: Bearer <token>",
    };
    let mut response = error(StatusCode::UNAUTHORIZED, why);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response.into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderMap, HeaderValue};

    use super::{bearer_token, digest, matches};

    #[test]
    fn only_the_token_matches() {
        let expected = digest("s3cret");
        assert!(matches("s3cret", &expected));
        for other in ["", "s3cre", "s3cret ", "S3cret", "s3cret\0"] {
            assert!(!matches(other, &expected), "{other:?}");
        }
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
