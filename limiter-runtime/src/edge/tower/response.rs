//! What the layer answers a request it refuses, in the request's own protocol, and the body type of every
//! response from behind the layer.

use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http_body::{Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::edge::body::HoldingBody;
use crate::edge::grpc;
use crate::{Permit, RateLimited, Reason};

pin_project! {
    /// The body of a response from behind a [`RateLimitLayer`](super::RateLimitLayer): the inner service's
    /// own, or the text of the layer's refusal.
    pub struct ResponseBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<B> {
        Inner { #[pin] body: HoldingBody<B> },
        Refusal { text: Option<Bytes> },
    }
}

impl<B> ResponseBody<B> {
    /// Wraps the inner service's body, holding the request's permits in flight until it is done.
    pub(super) fn new(body: B, permit: Option<Permit>) -> Self {
        ResponseBody {
            kind: Kind::Inner {
                body: HoldingBody::new(body, permit),
            },
        }
    }

    /// Creates a body of `text` (none when empty).
    fn text(text: String) -> Self {
        let text = (!text.is_empty()).then(|| Bytes::from(text));
        ResponseBody {
            kind: Kind::Refusal { text },
        }
    }
}

impl<B: http_body::Body<Data = Bytes>> http_body::Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project().kind.project() {
            KindProjection::Inner { body } => body.poll_frame(cx),
            KindProjection::Refusal { text } => Poll::Ready(text.take().map(Frame::data).map(Ok)),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body, .. } => body.is_end_stream(),
            Kind::Refusal { text } => text.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body, .. } => body.size_hint(),
            Kind::Refusal { text } => {
                SizeHint::with_exact(text.as_ref().map_or(0, |text| text.len() as u64))
            }
        }
    }
}

impl<B> std::fmt::Debug for ResponseBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.kind {
            Kind::Inner { .. } => "ResponseBody::Inner",
            Kind::Refusal { .. } => "ResponseBody::Refusal",
        })
    }
}

/// How a refusal is written for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// As a gRPC status (the request's `content-type` is `application/grpc...`).
    Grpc,
    /// As an RFC 9457 problem document (the request accepts `application/problem+json`).
    Problem,
    /// As `RateLimited` answers for itself: its [`text`](RateLimited::text) (the message, and the policy that
    /// refused the call) as plain text.
    Text,
}

/// The problem type of a reached limit (draft-ietf-httpapi-ratelimit-headers-11, section 5.1).
const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

impl Refusal {
    /// Decides how to refuse `request`.
    pub(super) fn for_request(request: &Parts) -> Refusal {
        let has = |value: &HeaderValue, wanted: &str| {
            value
                .as_bytes()
                .windows(wanted.len())
                .any(|w| w.eq_ignore_ascii_case(wanted.as_bytes()))
        };
        let grpc = request.headers.get(CONTENT_TYPE).is_some_and(|value| {
            let value = value.as_bytes();
            value.len() >= 16 && value[..16].eq_ignore_ascii_case(b"application/grpc")
        });
        if grpc {
            Refusal::Grpc
        } else if request
            .headers
            .get_all(ACCEPT)
            .iter()
            .any(|value| has(value, "application/problem+json"))
        {
            Refusal::Problem
        } else {
            Refusal::Text
        }
    }

    /// Builds the response refusing a request with `rejection`: the status, `Retry-After` and the quota fields over
    /// HTTP (only a reached limit is a problem document; an unavailable limiter, a call too large and a
    /// misconfigured limit are plain text), the status and its metadata over gRPC.
    pub(super) fn response<B>(self, rejection: &RateLimited) -> http::Response<ResponseBody<B>> {
        if self == Refusal::Grpc {
            let mut response = http::Response::new(ResponseBody::text(String::new()));
            grpc::write_status(rejection, response.headers_mut());
            return response;
        }
        let problem = self == Refusal::Problem && rejection.reason() == Reason::Limited;
        let (content_type, body) = if problem {
            ("application/problem+json", problem_document(rejection))
        } else {
            ("text/plain; charset=utf-8", rejection.text())
        };
        let mut response = http::Response::new(ResponseBody::text(body));
        *response.status_mut() = rejection.status();
        *response.headers_mut() = rejection.headers();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    }
}

impl Refusal {
    /// Returns the inner service's `response` to this request, its body holding `permit` until it is done; or, when it
    /// is a refusal a [`RateLimited`] answered for itself (a handler's, which carries the `RateLimited` in its
    /// extensions), that refusal answered as the layer answers its own: one refusal format per service. The
    /// handler's other headers and its extensions stay.
    pub(super) fn restate<B>(
        self,
        response: http::Response<B>,
        permit: Option<Permit>,
    ) -> http::Response<ResponseBody<B>> {
        // As plain text, the handler's refusal is already the layer's.
        let rejection = match response.extensions().get::<RateLimited>() {
            Some(rejection) if self != Refusal::Text => rejection.clone(),
            _ => return response.map(|body| ResponseBody::new(body, permit)),
        };
        let (mut parts, _) = response.into_parts();
        let (answer, body) = self.response(&rejection).into_parts();
        parts.status = answer.status;
        for stale in [CONTENT_TYPE, CONTENT_LENGTH] {
            parts.headers.remove(stale);
        }
        for name in answer.headers.keys() {
            parts.headers.remove(name);
        }
        for (name, value) in &answer.headers {
            parts.headers.append(name, value.clone());
        }
        http::Response::from_parts(parts, body)
    }
}

/// Writes a reached limit as a `quota-exceeded` problem: its message as the detail, and the policies that refused
/// the call.
fn problem_document(rejection: &RateLimited) -> String {
    let mut json = String::from("{\"type\":");
    json_string(&mut json, QUOTA_EXCEEDED);
    json.push_str(",\"title\":\"Request cannot be satisfied as assigned quota has been exceeded\"");
    json.push_str(",\"status\":429,\"detail\":");
    json_string(&mut json, rejection.message());
    json.push_str(",\"violated-policies\":[");
    for (i, policy) in rejection.refusing().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json_string(&mut json, policy);
    }
    json.push_str("]}");
    json
}

/// Writes `text` as a JSON string.
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // Writing into a String cannot fail.
            c if u32::from(c) < 0x20 => drop(write!(out, "\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;

    use super::*;

    fn refusal(headers: &[(&str, &str)]) -> Refusal {
        let mut request = http::Request::builder();
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        Refusal::for_request(&request.body(()).unwrap().into_parts().0)
    }

    #[test]
    fn a_refusal_speaks_the_requests_protocol() {
        assert_eq!(refusal(&[]), Refusal::Text);
        assert_eq!(
            refusal(&[("content-type", "application/grpc")]),
            Refusal::Grpc
        );
        assert_eq!(
            refusal(&[("content-type", "Application/GRPC+proto")]),
            Refusal::Grpc
        );
        assert_eq!(
            refusal(&[("content-type", "application/json")]),
            Refusal::Text
        );
        let accept = ("accept", "application/json, application/problem+json;q=0.9");
        assert_eq!(refusal(&[accept]), Refusal::Problem);
        assert_eq!(refusal(&[("accept", "text/html")]), Refusal::Text);
    }

    /// Builds a handler's response carrying its refusal (`RateLimited` in its extensions), with a header of its own.
    fn handlers_refusal() -> (RateLimited, http::Response<String>) {
        use crate::algorithm::{Outcome, Terms};
        use crate::key::StoreKey;
        use crate::policy::PolicyName;
        use crate::Decision;
        let charge = Terms {
            window: 10_000_000,
            max: 5,
            cost: 1,
            burst: 5,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        let decision = Decision::new(&charge, Outcome::denied(5, 2_500_000, 0), 0, false);
        let policy = PolicyName::named("handler".into());
        let key = StoreKey::of_str("h:", "k");
        let rejection = RateLimited::new(
            "slow down".into(),
            (policy, Default::default()),
            key,
            decision,
            true,
            Vec::new(),
            Reason::Limited,
        );
        let response = http::Response::builder()
            .status(429)
            .header(CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(CONTENT_LENGTH, "9")
            .header("x-request-id", "7")
            .extension(rejection.clone())
            .body("slow down".to_owned())
            .unwrap();
        (rejection, response)
    }

    /// Checks that, asked for a problem, a handler's refusal is the layer's problem document, its own other headers and
    /// its extensions kept; as plain text it is left as the handler wrote it; a response that is no refusal is
    /// never touched.
    #[test]
    fn a_handlers_refusal_is_restated_as_the_layer_answers() {
        let (rejection, response) = handlers_refusal();
        let problem = Refusal::Problem.restate(response, None);
        let headers = problem.headers();
        assert_eq!(problem.status(), 429);
        assert_eq!(headers[CONTENT_TYPE], "application/problem+json");
        assert!(
            headers.get(CONTENT_LENGTH).is_none(),
            "the body's length changed"
        );
        assert_eq!(headers["x-request-id"], "7");
        assert_eq!(headers["retry-after"], "3");
        assert_eq!(problem.extensions().get::<RateLimited>(), Some(&rejection));
        assert_eq!(
            problem.into_body().size_hint().exact(),
            Some(problem_document(&rejection).len() as u64)
        );

        let (_, response) = handlers_refusal();
        let text = Refusal::Text.restate(response, None);
        assert_eq!(text.headers()[CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(text.headers()[CONTENT_LENGTH], "9");

        let (_, response) = handlers_refusal();
        let grpc = Refusal::Grpc.restate(response, None);
        assert_eq!(grpc.status(), 200, "a trailers-only gRPC status");
        assert_eq!(grpc.headers()[CONTENT_TYPE], "application/grpc");
        assert_eq!(grpc.headers()["grpc-status"], "8");

        let ok = http::Response::builder()
            .header(CONTENT_TYPE, "application/json")
            .body("{}".to_owned())
            .unwrap();
        let ok = Refusal::Problem.restate(ok, None);
        assert_eq!(ok.headers()[CONTENT_TYPE], "application/json");
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut out = String::new();
        json_string(&mut out, "a \"b\" \\ c\n é");
        assert_eq!(out, r#""a \"b\" \\ c\u000a é""#);
    }
}
