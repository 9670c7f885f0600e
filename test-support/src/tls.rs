//! Redis over TLS with ACL users, for the tests: certificates made afresh for each setup, and how its servers
//! are started and spoken to.
//!
//! The certificates are a CA, a certificate it signs for the servers (127.0.0.1 and localhost, also their
//! client certificate on the cluster bus and for replication), a client certificate it signs (mutual TLS),
//! and a second CA that signed none of them, to be refused. Secured servers listen on TLS alone (`--port 0`)
//! and know one ACL user, [`USER`]; the `default` user is off, so nothing reaches them in the clear or without
//! the password. Sentinels have their own user, [`SENTINEL_USER`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use limiter_runtime::LimiterBuilder;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use redis::{ClientTlsConfig, TlsCertificates};

/// The ACL user of secured servers (and the one the Sentinels, the replicas and the cluster nodes use).
pub const USER: &str = "limiter";
/// [`USER`]'s password.
pub const PASSWORD: &str = "limiter-secret";
/// The ACL user of secured Sentinels: not the servers'.
pub const SENTINEL_USER: &str = "sentinel";
/// [`SENTINEL_USER`]'s password.
pub const SENTINEL_PASSWORD: &str = "sentinel-secret";

/// PEM files made for one setup, in a directory of their own removed when dropped.
#[derive(Debug)]
pub struct Certificates {
    dir: PathBuf,
}

impl Certificates {
    /// Makes a CA, the servers' and a client's certificates it signs, and an unrelated CA.
    ///
    /// # Panics
    ///
    /// When the certificates cannot be made or written.
    pub fn generate() -> Certificates {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "limiter-tls-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a directory for the certificates");
        let (ca_params, ca_key) = authority("limiter test CA");
        let ca_pem = ca_params.self_signed(&ca_key).expect("the CA").pem();
        let ca = Issuer::new(ca_params, ca_key);
        let (other_params, other_key) = authority("a CA that signed nothing here");
        let other_pem = other_params.self_signed(&other_key).expect("a CA").pem();
        let signed = |names: Vec<String>, common_name: &str| {
            let mut params = CertificateParams::new(names).expect("valid names");
            params
                .distinguished_name
                .push(DnType::CommonName, common_name);
            let key = KeyPair::generate().expect("a key");
            let certificate = params.signed_by(&key, &ca).expect("a signed certificate");
            (certificate.pem(), key.serialize_pem())
        };
        let (server, server_key) = signed(vec!["127.0.0.1".into(), "localhost".into()], "redis");
        let (client, client_key) = signed(Vec::new(), "limiter client");
        let files = [
            ("ca.pem", ca_pem),
            ("other-ca.pem", other_pem),
            ("server.pem", server),
            ("server.key", server_key),
            ("client.pem", client),
            ("client.key", client_key),
        ];
        for (name, pem) in files {
            std::fs::write(dir.join(name), pem).expect("a certificate written");
        }
        Certificates { dir }
    }

    /// The path of the file `name` (`ca.pem`, `other-ca.pem`, `server.pem`, `server.key`, `client.pem`,
    /// `client.key`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The contents of the file `name` (see [`path`](Certificates::path)).
    pub fn pem(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).expect("a certificate file")
    }
}

impl Drop for Certificates {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A CA's parameters and key.
fn authority(name: &str) -> (CertificateParams, KeyPair) {
    let mut params = CertificateParams::new(Vec::new()).expect("no names");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params, KeyPair::generate().expect("a key"))
}

/// How a secured setup runs: its certificates, and whether its servers require a client certificate.
#[derive(Debug, Clone)]
pub struct Tls {
    /// The setup's certificates.
    pub certificates: Arc<Certificates>,
    /// Whether clients must present a certificate the CA signed (`tls-auth-clients yes`).
    pub mutual: bool,
}

impl Tls {
    /// Fresh certificates; clients need none of their own.
    pub fn new() -> Tls {
        Tls {
            certificates: Arc::new(Certificates::generate()),
            mutual: false,
        }
    }

    /// Fresh certificates; clients must present one the CA signed.
    pub fn mutual() -> Tls {
        Tls {
            mutual: true,
            ..Tls::new()
        }
    }

    /// `builder` trusting this setup's CA, and presenting the client certificate when the servers ask for one.
    pub fn configure(&self, builder: LimiterBuilder) -> LimiterBuilder {
        let builder = builder.redis_ca(self.certificates.pem("ca.pem"));
        match self.mutual {
            true => builder.redis_client_certificate(
                self.certificates.pem("client.pem"),
                self.certificates.pem("client.key"),
            ),
            false => builder,
        }
    }

    /// The URL of a secured server on `port`, as [`USER`].
    pub fn url(&self, port: u16) -> String {
        format!("rediss://{USER}:{PASSWORD}@127.0.0.1:{port}/")
    }

    /// The URL of a secured Sentinel on `port`, as [`SENTINEL_USER`].
    pub fn sentinel_url(&self, port: u16) -> String {
        format!("rediss://{SENTINEL_USER}:{SENTINEL_PASSWORD}@127.0.0.1:{port}/")
    }

    /// The configuration lines of a secured server or Sentinel listening on `port` (TLS alone), with the
    /// users `users` (`name password` pairs) and the `default` user off.
    pub(crate) fn config(&self, port: u16, users: &[(&str, &str)]) -> Vec<String> {
        let file = |name: &str| self.certificates.path(name).display().to_string();
        let mut lines = vec![
            "port 0".to_owned(),
            format!("tls-port {port}"),
            format!("tls-cert-file {}", file("server.pem")),
            format!("tls-key-file {}", file("server.key")),
            format!("tls-ca-cert-file {}", file("ca.pem")),
            format!(
                "tls-auth-clients {}",
                if self.mutual { "yes" } else { "no" }
            ),
            "tls-replication yes".to_owned(),
            "user default off".to_owned(),
        ];
        for (user, password) in users {
            lines.push(format!("user {user} on >{password} ~* &* +@all"));
        }
        lines
    }

    /// `redis-server` arguments of a secured server on `port`, whose replicas speak to their master as
    /// [`USER`], and whose cluster bus (when it is a cluster node) speaks TLS too.
    pub(crate) fn server_args(&self, port: u16) -> Vec<String> {
        let mut args = Vec::new();
        for line in self.config(port, &[(USER, PASSWORD)]) {
            let mut words = line.split(' ');
            args.push(format!("--{}", words.next().expect("a directive")));
            args.extend(words.map(str::to_owned));
        }
        args.extend(["--masteruser", USER, "--masterauth", PASSWORD].map(str::to_owned));
        args.extend(["--tls-cluster", "yes"].map(str::to_owned));
        args
    }

    /// The `redis-cli` options that reach a secured server.
    pub(crate) fn cli_args(&self) -> Vec<String> {
        let file = |name: &str| self.certificates.path(name).display().to_string();
        let mut args = vec!["--tls".to_owned(), "--cacert".to_owned(), file("ca.pem")];
        if self.mutual {
            args.extend(["--cert".to_owned(), file("client.pem")]);
            args.extend(["--key".to_owned(), file("client.key")]);
        }
        args.extend(["--user", USER, "--pass", PASSWORD].map(str::to_owned));
        args
    }

    /// A synchronous connection to `url` with this setup's CA (and client certificate), made within `timeout`
    /// (if any).
    pub(crate) fn connect(
        &self,
        url: &str,
        timeout: Option<Duration>,
    ) -> redis::RedisResult<redis::Connection> {
        let certificates = TlsCertificates {
            client_tls: self.mutual.then(|| ClientTlsConfig {
                client_cert: self.certificates.pem("client.pem"),
                client_key: self.certificates.pem("client.key"),
            }),
            root_cert: Some(self.certificates.pem("ca.pem")),
        };
        crate::connect(redis::Client::build_with_tls(url, certificates)?, timeout)
    }
}

impl Default for Tls {
    fn default() -> Tls {
        Tls::new()
    }
}
