//! The admin API's one credential: a bearer token, compared in constant time.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
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

/// Lets a request with the token (`Authorization: Bearer <token>`) through; answers 401 to any other.
pub(super) async fn bearer(State(admin): State<Admin>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match token {
        Some(token) if matches(token.trim(), &admin.token) => next.run(request).await,
        _ => {
            let mut response = error(StatusCode::UNAUTHORIZED, "a bearer token is required");
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                "Bearer".parse().expect("a header value"),
            );
            response.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{digest, matches};

    #[test]
    fn only_the_token_matches() {
        let expected = digest("s3cret");
        assert!(matches("s3cret", &expected));
        for other in ["", "s3cre", "s3cret ", "S3cret", "s3cret\0"] {
            assert!(!matches(other, &expected), "{other:?}");
        }
    }
}
