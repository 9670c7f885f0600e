//! What secures the connections to Redis: `rediss://` URLs (feature `tls`: rustls, with the ring provider),
//! the certificate authorities trusted instead of the system's, and a client certificate for mutual TLS.
//! ACL users and passwords come in the URLs (`rediss://user:password@host:port/`).
//!
//! Every URL the limiter is given becomes a [`Client`] here, so a server, a cluster's seeds, the Sentinels and
//! the master they name are secured alike. A setup that cannot work is refused when the limiter is built:
//! `rediss://` without the feature, a CA or client certificate that holds no certificate, or TLS settings
//! with no `rediss://` URL to use them (most often a URL missing its second `s`, which would send the password
//! in the clear).

use std::fmt;

use redis::Client;
#[cfg(feature = "tls")]
use redis::IntoConnectionInfo;

use crate::rule::env;
use crate::Error;

/// The environment variable naming a PEM file of the certificate authorities to trust for `rediss://`.
pub(crate) const CA_ENV: &str = "LIMITER_REDIS_CA";
/// The environment variable naming a PEM file of the client's certificate chain (mutual TLS).
pub(crate) const CLIENT_CERT_ENV: &str = "LIMITER_REDIS_CLIENT_CERT";
/// The environment variable naming a PEM file of the client's private key (mutual TLS).
pub(crate) const CLIENT_KEY_ENV: &str = "LIMITER_REDIS_CLIENT_KEY";

/// What secures connections to Redis beyond their URLs. Both parts are PEM text.
#[derive(Clone, Default)]
pub(crate) struct Tls {
    /// The certificate authorities trusted instead of the system's.
    pub(crate) ca: Option<Vec<u8>>,
    /// The client's certificate chain and private key.
    pub(crate) client: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("ca", &self.ca.is_some())
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

impl Tls {
    /// Returns `self`, with what the environment sets over it: `LIMITER_REDIS_CA`, and `LIMITER_REDIS_CLIENT_CERT`
    /// with `LIMITER_REDIS_CLIENT_KEY`, each a path to a PEM file. A setting that cannot be read changes
    /// nothing, and its error (naming its variable) goes to `errors`.
    pub(crate) fn with_env(mut self, errors: &mut Vec<Error>) -> Tls {
        if let Some(path) = env(CA_ENV) {
            let ca = read(CA_ENV, &path).and_then(|pem| {
                pem::certificates(&pem).map_err(|reason| env_file(CA_ENV, &path, reason))?;
                Ok(pem)
            });
            crate::rule::set(&mut self.ca, ca, errors);
        }
        let client = match (env(CLIENT_CERT_ENV), env(CLIENT_KEY_ENV)) {
            (None, None) => return self,
            (Some(cert), Some(key)) => (|| {
                let (chain, secret) = (read(CLIENT_CERT_ENV, &cert)?, read(CLIENT_KEY_ENV, &key)?);
                pem::certificates(&chain)
                    .map_err(|reason| env_file(CLIENT_CERT_ENV, &cert, reason))?;
                pem::private_key(&secret)
                    .map_err(|reason| env_file(CLIENT_KEY_ENV, &key, reason))?;
                Ok((chain, secret))
            })(),
            (Some(path), None) => {
                let reason = format!("{CLIENT_KEY_ENV} must name the certificate's private key");
                Err(env_file(CLIENT_CERT_ENV, &path, reason))
            }
            (None, Some(path)) => {
                let reason = format!("{CLIENT_CERT_ENV} must name the key's certificate");
                Err(env_file(CLIENT_KEY_ENV, &path, reason))
            }
        };
        crate::rule::set(&mut self.client, client, errors);
        self
    }

    /// Refuses a setup whose TLS settings no URL of `urls` would use (none is `rediss://`).
    pub(crate) fn check_used<'a>(
        &self,
        urls: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Error> {
        let set = match (&self.ca, &self.client) {
            (None, None) => return Ok(()),
            (Some(_), _) => "a CA certificate",
            (None, Some(_)) => "a client certificate",
        };
        let mut urls = urls.into_iter().peekable();
        let first = urls.peek().map(|url| redacted(url));
        if urls.any(is_tls) {
            return Ok(());
        }
        Err(Error::InvalidRedisSetup(format!(
            "{set} is set for Redis, but no Redis URL uses TLS (rediss://), so it would never be used: \
             write {} with rediss://",
            first.unwrap_or_default()
        )))
    }

    /// Creates a client for `url`: over TLS, with the CA and the client certificate, when it is `rediss://`.
    pub(crate) fn client(&self, url: &str) -> Result<Client, Error> {
        let invalid = |source| Error::InvalidRedisUrl {
            url: redacted(url),
            source,
        };
        if !is_tls(url) {
            return Client::open(url).map_err(invalid);
        }
        #[cfg(feature = "tls")]
        {
            let info = url.into_connection_info().map_err(invalid)?;
            let certificates = self.certificates()?;
            Client::build_with_tls(info, certificates).map_err(invalid)
        }
        #[cfg(not(feature = "tls"))]
        Err(Error::InvalidRedisSetup(format!(
            "the Redis URL {} asks for TLS (rediss://), which needs limiter-runtime's `tls` feature: \
             enable it in Cargo.toml",
            redacted(url)
        )))
    }

    /// Returns the certificates redis-rs takes, checked; makes sure rustls has a crypto provider.
    #[cfg(feature = "tls")]
    pub(crate) fn certificates(&self) -> Result<redis::TlsCertificates, Error> {
        // A process whose rustls was built with more than one provider has no default: ring becomes it,
        // instead of rustls panicking on the first connection.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another thread may install one meanwhile; either is fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let setup = |what: &str, reason: String| {
            Error::InvalidRedisSetup(format!("the Redis {what} cannot be used: {reason}"))
        };
        if let Some(ca) = &self.ca {
            pem::certificates(ca).map_err(|reason| setup("CA certificate", reason))?;
        }
        if let Some((chain, key)) = &self.client {
            pem::certificates(chain).map_err(|reason| setup("client certificate", reason))?;
            pem::private_key(key).map_err(|reason| setup("client key", reason))?;
        }
        Ok(redis::TlsCertificates {
            client_tls: self
                .client
                .as_ref()
                .map(|(chain, key)| redis::ClientTlsConfig {
                    client_cert: chain.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.ca.clone(),
        })
    }

    /// Creates a Redis Cluster client builder with the certificates, when the seeds speak TLS.
    pub(crate) fn cluster(
        &self,
        builder: redis::cluster::ClusterClientBuilder,
        seeds: &[Client],
    ) -> Result<redis::cluster::ClusterClientBuilder, Error> {
        let tls = seeds.iter().any(|seed| {
            matches!(
                seed.get_connection_info().addr(),
                redis::ConnectionAddr::TcpTls { .. }
            )
        });
        #[cfg(feature = "tls")]
        if tls {
            return Ok(builder.certs(self.certificates()?));
        }
        let _ = tls;
        Ok(builder)
    }
}

/// Returns whether `url` asks for TLS.
pub(crate) fn is_tls(url: &str) -> bool {
    url.get(..9)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("rediss://"))
}

/// Returns `url` with its password, if any, written `***`: what errors and logs may show.
pub(crate) fn redacted(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..].find('/').map_or(url.len(), |i| start + i);
    let Some(at) = url[start..authority_end].rfind('@').map(|i| start + i) else {
        return url.to_owned();
    };
    match url[start..at].find(':').map(|i| start + i) {
        Some(colon) => format!("{}***{}", &url[..=colon], &url[at..]),
        None => url.to_owned(),
    }
}

fn read(name: &'static str, path: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path)
        .map_err(|error| env_file(name, path, format!("the file cannot be read: {error}")))
}

fn env_file(name: &'static str, path: &str, reason: String) -> Error {
    Error::InvalidEnvFile {
        name,
        path: path.to_owned(),
        reason,
    }
}

/// PEM text, checked before any connection needs it.
mod pem {
    /// Checks that `pem` holds certificates: at least one, every one readable.
    pub(in crate::backend::redis) fn certificates(pem: &[u8]) -> Result<(), String> {
        #[cfg(feature = "tls")]
        {
            use rustls::pki_types::pem::PemObject;
            use rustls::pki_types::CertificateDer;
            let mut none = true;
            for certificate in CertificateDer::pem_slice_iter(pem) {
                certificate.map_err(|error| format!("a certificate is not valid PEM ({error})"))?;
                none = false;
            }
            match none {
                true => Err("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()),
                false => Ok(()),
            }
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = pem;
            Err(super::NO_TLS.into())
        }
    }

    /// Checks that `pem` holds a private key.
    pub(in crate::backend::redis) fn private_key(pem: &[u8]) -> Result<(), String> {
        #[cfg(feature = "tls")]
        {
            use rustls::pki_types::pem::PemObject;
            use rustls::pki_types::PrivateKeyDer;
            PrivateKeyDer::from_pem_slice(pem)
                .map(drop)
                .map_err(|error| format!("it holds no readable PEM private key ({error})"))
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = pem;
            Err(super::NO_TLS.into())
        }
    }
}

/// Why TLS settings are refused when the `tls` feature is off.
#[cfg(not(feature = "tls"))]
const NO_TLS: &str = "TLS to Redis needs limiter-runtime's `tls` feature, which is off";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redacted("rediss://limiter:s3cr:et@10.0.0.1:6380/2"),
            "rediss://limiter:***@10.0.0.1:6380/2"
        );
        assert_eq!(redacted("redis://:pw@host/"), "redis://:***@host/");
        assert_eq!(redacted("redis://user@host/"), "redis://user@host/");
        assert_eq!(redacted("redis://host:6379/"), "redis://host:6379/");
        assert_eq!(redacted("not a url"), "not a url");
    }

    #[test]
    fn the_scheme_says_tls() {
        assert!(is_tls("rediss://host/"));
        assert!(is_tls("REDISS://host/"));
        assert!(!is_tls("redis://host/"));
        assert!(!is_tls("rediss:/"));
    }

    #[test]
    fn tls_settings_no_url_uses_are_refused() {
        let tls = Tls {
            ca: Some(b"pem".to_vec()),
            client: None,
        };
        let error = tls
            .check_used(["redis://u:pw@10.0.0.1:6379/"])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("no Redis URL uses TLS") && error.contains("redis://u:***@10.0.0.1"),
            "{error}"
        );
        assert!(tls.check_used(["redis://a/", "rediss://b/"]).is_ok());
        assert!(Tls::default().check_used(["redis://a/"]).is_ok());
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn rediss_without_the_feature_says_which_feature() {
        let error = Tls::default()
            .client("rediss://u:pw@127.0.0.1:6380/")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`tls` feature") && error.contains("rediss://u:***@127.0.0.1:6380/"),
            "{error}"
        );
    }

    #[cfg(feature = "tls")]
    #[test]
    fn a_ca_that_holds_no_certificate_is_refused_when_built() {
        let tls = Tls {
            ca: Some(b"not a certificate".to_vec()),
            client: None,
        };
        let error = tls
            .client("rediss://127.0.0.1:6380/")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("CA certificate cannot be used") && error.contains("no PEM certificate"),
            "{error}"
        );
    }
}
