//! The kubeconfig a standalone server writes for kubectl: the server's URL, the CA that signed its
//! certificate and the bearer token, in one context made current. Written atomically with mode
//! 0600, as JSON (which every kubeconfig reader accepts as YAML).

use kube::config::{AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};
use std::path::Path;

/// Builds the kubeconfig for `server_url`, its cluster, user and context named `name`.
pub fn build(name: &str, server_url: &str, ca_pem: &str, token: &str) -> Kubeconfig {
    use base64::Engine;
    let ca_data = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    Kubeconfig {
        clusters: vec![NamedCluster {
            other: Default::default(),
            name: name.into(),
            cluster: Some(Cluster {
                server: Some(server_url.into()),
                certificate_authority_data: Some(ca_data),
                ..Default::default()
            }),
        }],
        auth_infos: vec![NamedAuthInfo {
            other: Default::default(),
            name: name.into(),
            auth_info: Some(AuthInfo { token: Some(token.to_string().into()), ..Default::default() }),
        }],
        contexts: vec![NamedContext {
            other: Default::default(),
            name: name.into(),
            context: Some(Context {
                cluster: name.into(),
                user: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            }),
        }],
        current_context: Some(name.into()),
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Default::default()
    }
}

/// Writes `config` to `path` atomically (temporary file, then rename), readable by the owner only.
pub fn write(path: &Path, config: &Kubeconfig) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(config).map_err(std::io::Error::other)?;
    text.push('\n');
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("kubeconfig")));
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_kubeconfig_reads_back_with_kube() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kc");
        write(&path, &build("my-server", "https://127.0.0.1:1234", "-----BEGIN CERTIFICATE-----\n", "tok")).unwrap();
        let read = Kubeconfig::read_from(&path).unwrap();
        assert_eq!(read.current_context.as_deref(), Some("my-server"));
        let server = read.clusters[0].cluster.as_ref().and_then(|c| c.server.clone());
        assert_eq!(server.as_deref(), Some("https://127.0.0.1:1234"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
