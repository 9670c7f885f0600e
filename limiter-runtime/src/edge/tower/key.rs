//! [`Key`]: what a request is counted under.

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use http::header::{HeaderName, HeaderValue};
use http::request::Parts;
use http::Extensions;

use super::forwarded::{self, Chain};

/// What a [`RateLimitLayer`](super::RateLimitLayer) counts a request under: its client's IP address, a
/// header, its route, or what a closure makes of it.
///
/// A key that finds nothing in a request (no such header, a forwarding chain missing, malformed or shorter
/// than the proxies trusted) does not leave the request unlimited: the layer counts it under the peer's
/// address instead, unless told otherwise ([`fallback`](super::RateLimitLayer::fallback) for one shared key,
/// [`pass_unidentified`](super::RateLimitLayer::pass_unidentified) to let such requests through), and says
/// so (a metric for each, a warning at most once a minute). Finding a key never fails the request and never
/// panics, whatever the request holds.
///
/// IPv6 clients are counted by their /64 network by default, since one client is given a /64 to choose
/// addresses from; [`ipv6_prefix`](Key::ipv6_prefix) changes it.
///
/// ```
/// use limiter_runtime::tower::Key;
///
/// let direct = Key::peer_ip();                   // clients connect to this server directly
/// let behind_one = Key::x_forwarded_for(1);      // behind one proxy that appends to X-Forwarded-For
/// let behind_two = Key::forwarded(2);            // behind two proxies that append to Forwarded
/// let per_address = Key::peer_ip().ipv6_prefix(128); // every IPv6 address counted alone
/// let per_api_key = Key::header("x-api-key");
/// let per_route = Key::route();
/// let per_tenant = Key::from_fn(|request| {
///     request.uri.path().strip_prefix("/tenants/")?.split('/').next().map(str::to_owned)
/// });
/// ```
#[derive(Clone)]
pub struct Key {
    source: Source,
    /// The bits of an IPv6 address that name its client (64 by default).
    ipv6_prefix: u8,
}

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

/// The header names [`Key::header`] takes: a [`HeaderName`], or its text.
pub trait IntoHeaderName: sealed::Sealed {
    /// Returns the header name.
    fn into_header_name(self) -> HeaderName;
}

impl IntoHeaderName for HeaderName {
    fn into_header_name(self) -> HeaderName {
        self
    }
}

impl IntoHeaderName for &str {
    /// Returns the header named `self`, in any case (`"X-Api-Key"` is `x-api-key`).
    ///
    /// # Panics
    ///
    /// When `self` is not a header name (a space, a colon, bytes that are not a token's), as
    /// `HeaderName::from_static` does: the key is made once, at start-up, where a typo should stop the
    /// service rather than leave a route unlimited.
    fn into_header_name(self) -> HeaderName {
        HeaderName::from_bytes(self.as_bytes()).unwrap_or_else(|_| {
            panic!("Key::header({self:?}): not a header name (RFC 9110 token characters only)")
        })
    }
}

impl IntoHeaderName for String {
    /// Returns the header named `self`, as for `&str`: a name read from configuration.
    fn into_header_name(self) -> HeaderName {
        self.as_str().into_header_name()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for http::HeaderName {}
    impl Sealed for &str {}
    impl Sealed for String {}
}

impl Key {
    /// Creates a key reading the IP address of the peer: the client, when clients connect to this server directly.
    ///
    /// The peer's address is what the server put in the request's extensions: axum's
    /// `ConnectInfo<SocketAddr>` (serve with `into_make_service_with_connect_info::<SocketAddr>()`; feature
    /// `axum`), tonic's `TcpConnectInfo` (feature `tonic`), or a `SocketAddr` (what a hyper server, or any
    /// other, inserts itself). IPv4-mapped IPv6 addresses count as the IPv4 address.
    ///
    /// A server that records no peer address (axum's `serve(listener, app)` without connect info) leaves the
    /// layer unable to tell clients apart: every request then counts under one shared key,
    /// `no-peer-address`, and an error in the log says how to serve the addresses. Never unlimited.
    ///
    /// Behind a proxy, the peer is the proxy, and every client would share its count: use
    /// [`x_forwarded_for`](Key::x_forwarded_for) or [`forwarded`](Key::forwarded) there.
    pub fn peer_ip() -> Key {
        Key::of(Source::Peer)
    }

    /// Creates a key reading the client's IP address behind `trusted_proxies` proxies that each append to
    /// `X-Forwarded-For`: the entry `trusted_proxies` places from the right, the address the outermost of them received
    /// the request from. Never the left-most entry, which the client writes itself.
    ///
    /// With 0 trusted proxies, the header is ignored and the key is the [peer's address](Key::peer_ip). Only
    /// count proxies that always append (and that clients cannot bypass): a client reaching the server
    /// around them chooses its own key. A request whose header is missing, unreadable or too short is counted
    /// under its peer's address (see [`Key`]).
    pub fn x_forwarded_for(trusted_proxies: usize) -> Key {
        Key::behind(Chain::XForwardedFor, trusted_proxies)
    }

    /// Creates a key like [`x_forwarded_for`](Key::x_forwarded_for)'s, for proxies that append to `Forwarded`
    /// (RFC 7239): the `for` parameter of the element `trusted_proxies` places from the right.
    pub fn forwarded(trusted_proxies: usize) -> Key {
        Key::behind(Chain::Forwarded, trusted_proxies)
    }

    fn behind(chain: Chain, trusted: usize) -> Key {
        match trusted {
            0 => Key::peer_ip(),
            _ => Key::of(Source::Behind { chain, trusted }),
        }
    }

    /// Creates a key reading the value of header `name` (an API key, a tenant): the first one, when the request has
    /// several. An absent or empty header finds nothing. A value with bytes outside printable ASCII, or with `%`, is
    /// counted with those bytes percent-encoded, so that distinct values never share a count.
    ///
    /// `name` is a [`HeaderName`] or its text (`"x-api-key"`, in any case; a `String` read from configuration
    /// too).
    pub fn header(name: impl IntoHeaderName) -> Key {
        Key::of(Source::Header(name.into_header_name()))
    }

    /// Creates a key reading the request's route: with the `axum` feature, the route the request matched
    /// (`/employees/{id}`: axum's `MatchedPath`, known to a layer added with `Router::layer` or `route_layer`), else
    /// the request's path (for gRPC, its method: `/package.Service/Method`).
    ///
    /// Where no router matched, every distinct path is a key of its own: prefer [`Key::from_fn`] when
    /// clients choose the paths freely.
    pub fn route() -> Key {
        Key::of(Source::Route)
    }

    /// Creates a key from what `key` makes of the request's head (method, URI, headers, extensions); `None` finds
    /// nothing.
    pub fn from_fn<F>(key: F) -> Key
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        Key::of(Source::Function(Arc::new(key)))
    }

    /// Counts IPv6 clients by the first `bits` bits of their address (at most 128: every address alone),
    /// instead of their /64. Applies to the addresses this key reads, and to the peer's address a request is
    /// counted under when the key finds nothing. IPv4 addresses are counted whole.
    pub fn ipv6_prefix(mut self, bits: u8) -> Key {
        self.ipv6_prefix = bits.min(128);
        self
    }

    fn of(source: Source) -> Key {
        Key {
            source,
            ipv6_prefix: 64,
        }
    }

    /// Returns the key of `request`, if this finds one.
    pub(crate) fn extract<'a>(&self, request: &'a Parts) -> Option<Cow<'a, str>> {
        match &self.source {
            Source::Peer => self.address(peer(&request.extensions)?),
            Source::Behind { chain, trusted } => {
                self.address(forwarded::client(&request.headers, *chain, *trusted)?)
            }
            Source::Header(name) => header(request.headers.get(name)?),
            Source::Route => Some(route(request)),
            Source::Function(key) => key(request).map(Cow::Owned),
        }
    }

    /// Returns the peer's address of `request` as a key, for a request this key finds nothing in.
    pub(crate) fn peer_of<'a>(&self, request: &'a Parts) -> Option<Cow<'a, str>> {
        self.address(peer(&request.extensions)?)
    }

    /// Describes what this key reads, for messages: "the X-Forwarded-For entry 2 from the right".
    pub(super) fn describe(&self) -> String {
        match &self.source {
            Source::Peer => "the peer's address".to_owned(),
            Source::Behind { chain, trusted } => {
                let header = match chain {
                    Chain::XForwardedFor => "an X-Forwarded-For",
                    Chain::Forwarded => "a Forwarded",
                };
                format!("{header} entry {trusted} from the right (the header missing, unreadable or too short)")
            }
            Source::Header(name) => format!("the header {name}"),
            Source::Route => "the route".to_owned(),
            Source::Function(_) => "what the key's closure makes of the request".to_owned(),
        }
    }

    /// Returns an address as a key: IPv4 whole, IPv6 as its network of [`ipv6_prefix`](Key::ipv6_prefix) bits.
    fn address(&self, address: IpAddr) -> Option<Cow<'static, str>> {
        Some(Cow::Owned(match address.to_canonical() {
            IpAddr::V6(v6) if self.ipv6_prefix < 128 => {
                let bits = u32::from(self.ipv6_prefix);
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                let network = Ipv6Addr::from(u128::from(v6) & mask);
                format!("{network}/{bits}")
            }
            address => address.to_string(),
        }))
    }
}

/// Returns the peer's address, as the server recorded it in the request's extensions.
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

/// Returns a header's value as a key: printable ASCII as it is; otherwise `%` and the bytes outside printable ASCII
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

/// Returns the route `request` matched, else its path.
fn route(request: &Parts) -> Cow<'_, str> {
    #[cfg(feature = "axum")]
    if let Some(route) = request.extensions.get::<axum::extract::MatchedPath>() {
        return Cow::Borrowed(route.as_str());
    }
    Cow::Borrowed(request.uri.path())
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Peer => f.write_str("Key::peer_ip()"),
            Source::Behind { chain, trusted } => match chain {
                Chain::XForwardedFor => write!(f, "Key::x_forwarded_for({trusted})"),
                Chain::Forwarded => write!(f, "Key::forwarded({trusted})"),
            },
            Source::Header(name) => write!(f, "Key::header({name:?})"),
            Source::Route => f.write_str("Key::route()"),
            Source::Function(_) => f.write_str("Key::from_fn(..)"),
        }?;
        match self.ipv6_prefix {
            64 => Ok(()),
            bits => write!(f, ".ipv6_prefix({bits})"),
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

    /// Checks that IPv6 clients count by their /64 unless told otherwise; IPv4 ones, and mapped ones, whole.
    #[test]
    fn ipv6_clients_count_by_their_network() {
        let mut request = head(http::Request::builder());
        let at = |request: &mut Parts, address: &str| {
            request
                .extensions
                .insert(address.parse::<SocketAddr>().unwrap());
        };
        at(&mut request, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4000");
        let key = |key: Key| key.extract(&request).map(Cow::into_owned);
        assert_eq!(key(Key::peer_ip()).as_deref(), Some("2001:db8:1:2::/64"));
        assert_eq!(
            key(Key::peer_ip().ipv6_prefix(48)).as_deref(),
            Some("2001:db8:1::/48")
        );
        assert_eq!(
            key(Key::peer_ip().ipv6_prefix(128)).as_deref(),
            Some("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
        );
        assert_eq!(key(Key::peer_ip().ipv6_prefix(0)).as_deref(), Some("::/0"));
        at(&mut request, "[::ffff:192.0.2.7]:4000");
        let key = |key: Key| key.extract(&request).map(Cow::into_owned);
        assert_eq!(key(Key::peer_ip()).as_deref(), Some("192.0.2.7"));
        assert_eq!(
            format!("{:?}", Key::forwarded(2).ipv6_prefix(56)),
            "Key::forwarded(2).ipv6_prefix(56)"
        );
    }

    #[test]
    fn header_names_are_taken_as_text_in_any_case() {
        let request = head(http::Request::builder().header("x-api-key", "k1"));
        assert_eq!(
            Key::header("X-Api-Key").extract(&request).as_deref(),
            Some("k1")
        );
    }

    #[test]
    #[should_panic(expected = "not a header name")]
    fn a_header_name_with_a_space_is_refused_when_the_key_is_made() {
        let _ = Key::header("x api key");
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
