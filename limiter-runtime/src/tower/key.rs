//! [`Key`]: what a request is counted under.

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use http::header::{HeaderName, HeaderValue};
use http::request::Parts;
use http::Extensions;

use super::forwarded::{self, Chain};

/// What a [`RateLimitLayer`](super::RateLimitLayer) counts a request under: its client's IP address, a
/// header, its route, or what a closure makes of it.
///
/// A key that finds nothing in a request (no address, no such header, a malformed one) leaves the request
/// unlimited, unless the layer has a [`fallback`](super::RateLimitLayer::fallback) key. Finding a key never
/// fails loudly and never panics, whatever the request holds.
///
/// ```
/// use http::HeaderName;
/// use limiter_runtime::tower::Key;
///
/// let direct = Key::peer_ip();                   // clients connect to this server directly
/// let behind_one = Key::x_forwarded_for(1);      // behind one proxy that appends to X-Forwarded-For
/// let behind_two = Key::forwarded(2);            // behind two proxies that append to Forwarded
/// let per_api_key = Key::header(HeaderName::from_static("x-api-key"));
/// let per_route = Key::route();
/// let per_tenant = Key::from_fn(|request| {
///     request.uri.path().strip_prefix("/tenants/")?.split('/').next().map(str::to_owned)
/// });
/// ```
#[derive(Clone)]
pub struct Key(Source);

/// A closure making a key of a request's head.
type KeyFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

#[derive(Clone)]
enum Source {
    Peer,
    Behind { chain: Chain, trusted: usize },
    Header(HeaderName),
    Route,
    Function(Arc<KeyFn>),
}

impl Key {
    /// The IP address of the peer: the client, when clients connect to this server directly.
    ///
    /// The peer's address is what the server put in the request's extensions: axum's
    /// `ConnectInfo<SocketAddr>` (serve with `into_make_service_with_connect_info::<SocketAddr>()`; feature
    /// `axum`), tonic's `TcpConnectInfo` (feature `tonic`), or a `SocketAddr` (what a hyper server, or any
    /// other, inserts itself). IPv4-mapped IPv6 addresses count as the IPv4 address.
    ///
    /// Behind a proxy, the peer is the proxy, and every client would share its count: use
    /// [`x_forwarded_for`](Key::x_forwarded_for) or [`forwarded`](Key::forwarded) there.
    pub fn peer_ip() -> Key {
        Key(Source::Peer)
    }

    /// The client's IP address behind `trusted_proxies` proxies that each append to `X-Forwarded-For`: the
    /// entry `trusted_proxies` places from the right, the address the outermost of them received the request
    /// from. Never the left-most entry, which the client writes itself.
    ///
    /// With 0 trusted proxies, the header is ignored and the key is the [peer's address](Key::peer_ip). Only
    /// count proxies that always append (and that clients cannot bypass): a client reaching the server
    /// around them chooses its own key.
    pub fn x_forwarded_for(trusted_proxies: usize) -> Key {
        Key::behind(Chain::XForwardedFor, trusted_proxies)
    }

    /// [`x_forwarded_for`](Key::x_forwarded_for), for proxies that append to `Forwarded` (RFC 7239): the `for`
    /// parameter of the element `trusted_proxies` places from the right.
    pub fn forwarded(trusted_proxies: usize) -> Key {
        Key::behind(Chain::Forwarded, trusted_proxies)
    }

    fn behind(chain: Chain, trusted: usize) -> Key {
        match trusted {
            0 => Key::peer_ip(),
            _ => Key(Source::Behind { chain, trusted }),
        }
    }

    /// The value of header `name` (an API key, a tenant): the first one, when the request has several. An
    /// absent or empty header finds nothing. A value with bytes outside printable ASCII, or with `%`, is
    /// counted with those bytes percent-encoded, so that distinct values never share a count.
    pub fn header(name: HeaderName) -> Key {
        Key(Source::Header(name))
    }

    /// The request's route: with the `axum` feature, the route the request matched (`/employees/{id}`:
    /// axum's `MatchedPath`, known to a layer added with `Router::layer` or `route_layer`), else the request's
    /// path (for gRPC, its method: `/package.Service/Method`).
    ///
    /// Where no router matched, every distinct path is a key of its own: prefer [`Key::from_fn`] when
    /// clients choose the paths freely.
    pub fn route() -> Key {
        Key(Source::Route)
    }

    /// What `key` makes of the request's head (method, URI, headers, extensions); `None` finds nothing.
    pub fn from_fn<F>(key: F) -> Key
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        Key(Source::Function(Arc::new(key)))
    }

    /// The key of `request`, if this finds one.
    pub(super) fn extract<'a>(&self, request: &'a Parts) -> Option<Cow<'a, str>> {
        match &self.0 {
            Source::Peer => address(peer(&request.extensions)?),
            Source::Behind { chain, trusted } => {
                address(forwarded::client(&request.headers, *chain, *trusted)?)
            }
            Source::Header(name) => header(request.headers.get(name)?),
            Source::Route => Some(route(request)),
            Source::Function(key) => key(request).map(Cow::Owned),
        }
    }
}

/// An address as a key.
fn address(address: IpAddr) -> Option<Cow<'static, str>> {
    Some(Cow::Owned(address.to_canonical().to_string()))
}

/// The peer's address, as the server recorded it in the request's extensions.
fn peer(extensions: &Extensions) -> Option<IpAddr> {
    #[cfg(feature = "axum")]
    if let Some(axum::extract::ConnectInfo(address)) =
        extensions.get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        return Some(address.ip());
    }
    #[cfg(feature = "tonic")]
    if let Some(info) = extensions.get::<tonic::transport::server::TcpConnectInfo>() {
        return info.remote_addr().map(|address| address.ip());
    }
    extensions.get::<SocketAddr>().map(SocketAddr::ip)
}

/// A header's value as a key: printable ASCII as it is; otherwise `%` and the bytes outside printable ASCII
/// percent-encoded. Empty: none.
fn header(value: &HeaderValue) -> Option<Cow<'_, str>> {
    use std::fmt::Write as _;
    let bytes = value.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    let plain = |byte: &u8| matches!(byte, b' '..=b'~') && *byte != b'%';
    if bytes.iter().all(plain) {
        // Printable ASCII: UTF-8.
        return std::str::from_utf8(bytes).ok().map(Cow::Borrowed);
    }
    let mut key = String::with_capacity(bytes.len() * 3);
    for byte in bytes {
        match plain(byte) {
            true => key.push(char::from(*byte)),
            // Writing into a String cannot fail.
            false => drop(write!(key, "%{byte:02X}")),
        }
    }
    Some(Cow::Owned(key))
}

/// The route `request` matched, else its path.
fn route(request: &Parts) -> Cow<'_, str> {
    #[cfg(feature = "axum")]
    if let Some(route) = request.extensions.get::<axum::extract::MatchedPath>() {
        return Cow::Borrowed(route.as_str());
    }
    Cow::Borrowed(request.uri.path())
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Peer => f.write_str("Key::peer_ip()"),
            Source::Behind { chain, trusted } => match chain {
                Chain::XForwardedFor => write!(f, "Key::x_forwarded_for({trusted})"),
                Chain::Forwarded => write!(f, "Key::forwarded({trusted})"),
            },
            Source::Header(name) => write!(f, "Key::header({name:?})"),
            Source::Route => f.write_str("Key::route()"),
            Source::Function(_) => f.write_str("Key::from_fn(..)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(build: http::request::Builder) -> Parts {
        build.body(()).unwrap().into_parts().0
    }

    #[test]
    fn header_values_are_keys_that_never_collide() {
        let key =
            |value: &[u8]| header(&HeaderValue::from_bytes(value).unwrap()).map(Cow::into_owned);
        assert_eq!(key(b"abc 123").as_deref(), Some("abc 123"));
        assert_eq!(key(b"").as_deref(), None);
        assert_eq!(key(b"\xff").as_deref(), Some("%FF"));
        assert_eq!(key(b"%FF").as_deref(), Some("%25FF"));
        assert_eq!(key(b"a\tb").as_deref(), Some("a%09b"));
        assert_ne!(key(b"\xff"), key(b"%FF"));
    }

    #[test]
    fn the_peer_is_what_the_server_recorded() {
        let mut request = head(http::Request::builder());
        assert_eq!(Key::peer_ip().extract(&request), None);
        request
            .extensions
            .insert("[::ffff:192.0.2.7]:4000".parse::<SocketAddr>().unwrap());
        assert_eq!(
            Key::peer_ip().extract(&request).as_deref(),
            Some("192.0.2.7")
        );
        // Zero trusted proxies: the peer, whatever the headers say.
        request
            .headers
            .insert("x-forwarded-for", HeaderValue::from_static("203.0.113.1"));
        assert_eq!(
            Key::x_forwarded_for(0).extract(&request).as_deref(),
            Some("192.0.2.7")
        );
        assert_eq!(
            Key::x_forwarded_for(1).extract(&request).as_deref(),
            Some("203.0.113.1")
        );
    }

    #[test]
    fn a_route_is_the_path_without_a_router() {
        let request = head(http::Request::builder().uri("/employees/1001?x=1"));
        assert_eq!(
            Key::route().extract(&request).as_deref(),
            Some("/employees/1001")
        );
    }
}
