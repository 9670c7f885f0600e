//! The client's address behind trusted proxies, from `X-Forwarded-For` or `Forwarded` (RFC 7239).
//!
//! Each proxy appends the address it received the request from, so the chain reads, left to right, from the
//! client to the proxy that connected to this server. Only the entries the trusted proxies appended can be
//! believed: anything to their left, the client wrote, and may have forged. Behind `n` trusted proxies the
//! client is the entry `n` places from the right (the one the outermost trusted proxy appended); it is never
//! the left-most entry.
//!
//! The headers are read as bytes, one field line after the other, and split on every comma: whatever a client
//! puts to the left (unterminated quotes, bytes that are not text, addresses of its choosing) cannot move the
//! entries the proxies appended. An entry that is not an address (`unknown`, an obfuscated `_node`, garbage)
//! yields none.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use http::header::{HeaderMap, FORWARDED};

/// The header the proxies in front write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chain {
    /// `X-Forwarded-For: <client>, <proxy 1>, ...`
    XForwardedFor,
    /// `Forwarded: for=<client>, for=<proxy 1>;proto=https, ...`
    Forwarded,
}

/// Returns the address the outermost of `trusted` (at least 1) proxies received the request from, as `chain` in
/// `headers` says.
pub(super) fn client(headers: &HeaderMap, chain: Chain, trusted: usize) -> Option<IpAddr> {
    let trusted = trusted.checked_sub(1)?;
    let lines = match chain {
        Chain::XForwardedFor => headers.get_all("x-forwarded-for"),
        Chain::Forwarded => headers.get_all(FORWARDED),
    };
    let entry = lines
        .iter()
        .rev()
        .flat_map(|line| line.as_bytes().rsplit(|byte| *byte == b','))
        .nth(trusted)?;
    match chain {
        Chain::XForwardedFor => node(entry),
        Chain::Forwarded => node(for_parameter(entry)?),
    }
}

/// Returns the value of the `for` parameter of one `Forwarded` element (`for=192.0.2.60;proto=http`).
fn for_parameter(element: &[u8]) -> Option<&[u8]> {
    element.split(|byte| *byte == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let (name, value) = pair.split_at(pair.iter().position(|byte| *byte == b'=')?);
        name.eq_ignore_ascii_case(b"for").then_some(&value[1..])
    })
}

/// Reads the address in one node: an IP address, optionally quoted, with an optional port (`192.0.2.60`,
/// `192.0.2.60:4711`, `2001:db8::17`, `"[2001:db8::17]:4711"`); IPv4-mapped IPv6 addresses read as IPv4.
fn node(node: &[u8]) -> Option<IpAddr> {
    let node = std::str::from_utf8(node.trim_ascii()).ok()?;
    let node = node
        .strip_prefix('"')
        .and_then(|quoted| quoted.strip_suffix('"'))
        .unwrap_or(node);
    let address = node
        .parse::<IpAddr>()
        .or_else(|_| node.parse::<SocketAddr>().map(|address| address.ip()))
        .or_else(|_| {
            let bracketed = node.strip_prefix('[').and_then(|v6| v6.strip_suffix(']'));
            bracketed.map_or(Err(()), |v6| {
                v6.parse::<Ipv6Addr>().map(IpAddr::V6).map_err(drop)
            })
        })
        .ok()?;
    Some(address.to_canonical())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(name: &str, lines: &[&[u8]]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            let value = http::HeaderValue::from_bytes(line).unwrap();
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value,
            );
        }
        headers
    }

    fn ip(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn the_client_is_counted_from_the_right() {
        let xff = headers("x-forwarded-for", &[b"203.0.113.9, 198.51.100.1, 10.0.0.2"]);
        assert_eq!(client(&xff, Chain::XForwardedFor, 1), ip("10.0.0.2"));
        assert_eq!(client(&xff, Chain::XForwardedFor, 2), ip("198.51.100.1"));
        assert_eq!(client(&xff, Chain::XForwardedFor, 3), ip("203.0.113.9"));
        // Fewer entries than trusted proxies: the chain did not come through them.
        assert_eq!(client(&xff, Chain::XForwardedFor, 4), None);
        // Zero trusted proxies: the header is not read at all.
        assert_eq!(client(&xff, Chain::XForwardedFor, 0), None);
    }

    /// Checks that field lines are one list, in order: a client's own line comes first, the proxies' after.
    #[test]
    fn several_lines_are_one_chain() {
        let xff = headers("x-forwarded-for", &[b"1.1.1.1, 2.2.2.2", b"3.3.3.3"]);
        assert_eq!(client(&xff, Chain::XForwardedFor, 1), ip("3.3.3.3"));
        assert_eq!(client(&xff, Chain::XForwardedFor, 2), ip("2.2.2.2"));
    }

    /// Checks that whatever a client writes to the left of the proxies' entries does not move them.
    #[test]
    fn forged_and_malformed_entries_on_the_left_change_nothing() {
        for forged in [
            &b"127.0.0.1, 8.8.8.8"[..],
            b"\xff\xfe garbage",
            b"for=\"unterminated",
            b"",
            b",,,,",
        ] {
            let mut line = forged.to_vec();
            line.extend_from_slice(b", 192.0.2.1, 10.0.0.1");
            let xff = headers("x-forwarded-for", &[&line]);
            assert_eq!(client(&xff, Chain::XForwardedFor, 2), ip("192.0.2.1"));
            let forwarded = headers(
                "forwarded",
                &[&[forged, &b", for=192.0.2.1;proto=https, for=10.0.0.1"[..]].concat()],
            );
            assert_eq!(client(&forwarded, Chain::Forwarded, 2), ip("192.0.2.1"));
        }
    }

    #[test]
    fn forwarded_nodes_are_read_as_rfc_7239_writes_them() {
        let forwarded = headers(
            "forwarded",
            &[b"for=192.0.2.60;proto=http;by=203.0.113.43, For=\"[2001:db8:cafe::17]:4711\", for=unknown, proto=https;for=\"198.51.100.7:80\""],
        );
        assert_eq!(client(&forwarded, Chain::Forwarded, 1), ip("198.51.100.7"));
        assert_eq!(client(&forwarded, Chain::Forwarded, 2), None, "unknown");
        assert_eq!(
            client(&forwarded, Chain::Forwarded, 3),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(client(&forwarded, Chain::Forwarded, 4), ip("192.0.2.60"));
        // An element without `for`, and an obfuscated node: no address.
        let forwarded = headers("forwarded", &[b"for=_hidden, proto=https"]);
        assert_eq!(client(&forwarded, Chain::Forwarded, 1), None);
        assert_eq!(client(&forwarded, Chain::Forwarded, 2), None);
    }

    #[test]
    fn nodes_with_ports_brackets_and_mapped_addresses() {
        for (text, address) in [
            ("192.0.2.1", "192.0.2.1"),
            (" 192.0.2.1:8080 ", "192.0.2.1"),
            ("2001:db8::1", "2001:db8::1"),
            ("[2001:db8::1]", "2001:db8::1"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("::ffff:192.0.2.1", "192.0.2.1"),
        ] {
            assert_eq!(node(text.as_bytes()), ip(address), "{text}");
        }
        for text in [
            "",
            "unknown",
            "_hidden",
            "300.1.1.1",
            "1.2.3.4:99999",
            "[1.2.3.4]",
            "é",
        ] {
            assert_eq!(node(text.as_bytes()), None, "{text}");
        }
    }

    /// Checks that any bytes at all get an answer or none, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic() {
        const ALPHABET: &[u8] = b",;=\"[]:. 0123456789abcdefFOR\xff\t";
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let mut line = Vec::new();
            for _ in 0..(state % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                line.push(ALPHABET[(state % ALPHABET.len() as u64) as usize]);
            }
            if let Ok(value) = http::HeaderValue::from_bytes(&line) {
                for name in ["x-forwarded-for", "forwarded"] {
                    let mut headers = HeaderMap::new();
                    headers.insert(http::HeaderName::from_static(name), value.clone());
                    for trusted in 0..4 {
                        let _ = client(&headers, Chain::XForwardedFor, trusted);
                        let _ = client(&headers, Chain::Forwarded, trusted);
                    }
                }
            }
        }
    }
}
