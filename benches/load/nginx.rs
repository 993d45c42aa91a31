//! The ceiling (issues 36 and 60): nginx, Debian's (`scripts/install-nginx.sh`, which
//! `make bench` runs and names in `FARM_NGINX`), serving over TLS the very bytes farm-apiserver
//! answered to a GET of one llama and to the LISTs of 1,000 and of 10,000 llamas (at v1), against
//! farm-apiserver, at 1, 4 and 16
//! keep-alive connections, in alternating runs ([`ab`]). nginx runs as Debian configures it for
//! two cores (`worker_processes auto`: a master and two workers), with TLS 1.3, TCP_NODELAY (its
//! default), no limit on requests per connection, and no access log; its CPU column counts its
//! workers.

use super::ab::{self, Load, ROUNDS};
use super::{Farm, LLAMAS, Target, fill, llama, start};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Reads at v1, the stored version: the bytes served need no conversion.
const V1: &str = "/apis/farm.example.com/v1/namespaces";

fn list(t: &Target, c: &reqwest::Client, namespace: &str) -> reqwest::RequestBuilder {
    c.get(t.url(&format!("{V1}/{namespace}/llamas")))
}

fn get(t: &Target, c: &reqwest::Client) -> reqwest::RequestBuilder {
    c.get(t.url(&format!("{V1}/small/llamas/l000500")))
}

const LOADS: [Load; 9] = [
    Load { name: "GET one llama (1 conn)", concurrency: 1, request: |t, c, _| get(t, c) },
    Load { name: "GET one llama (4 conns)", concurrency: 4, request: |t, c, _| get(t, c) },
    Load { name: "GET one llama (16 conns)", concurrency: 16, request: |t, c, _| get(t, c) },
    Load { name: "LIST 1,000 llamas (1 conn)", concurrency: 1, request: |t, c, _| list(t, c, "small") },
    Load { name: "LIST 1,000 llamas (4 conns)", concurrency: 4, request: |t, c, _| list(t, c, "small") },
    Load { name: "LIST 1,000 llamas (16 conns)", concurrency: 16, request: |t, c, _| list(t, c, "small") },
    Load { name: "LIST 10,000 llamas (1 conn)", concurrency: 1, request: |t, c, _| list(t, c, "large") },
    Load { name: "LIST 10,000 llamas (4 conns)", concurrency: 4, request: |t, c, _| list(t, c, "large") },
    Load { name: "LIST 10,000 llamas (16 conns)", concurrency: 16, request: |t, c, _| list(t, c, "large") },
];

/// nginx's configuration: the GET's answer and the two lists at their paths, over TLS on `port`.
fn config(dir: &Path, port: u16) -> String {
    let dir = dir.display();
    format!(
        "worker_processes auto;\n\
         pid {dir}/nginx.pid;\n\
         error_log stderr warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
           access_log off;\n\
           keepalive_requests 1000000000;\n\
           keepalive_timeout 300s;\n\
           client_body_temp_path {dir}/tmp;\n\
           proxy_temp_path {dir}/tmp;\n\
           fastcgi_temp_path {dir}/tmp;\n\
           uwsgi_temp_path {dir}/tmp;\n\
           scgi_temp_path {dir}/tmp;\n\
           server {{\n\
             listen 127.0.0.1:{port} ssl;\n\
             ssl_certificate {dir}/cert.pem;\n\
             ssl_certificate_key {dir}/key.pem;\n\
             ssl_protocols TLSv1.3;\n\
             default_type application/json;\n\
             root {dir};\n\
             location ~ /small/llamas/l000500$ {{ try_files /get.json =404; }}\n\
             location ~ /small/llamas$ {{ try_files /small.json =404; }}\n\
             location ~ /large/llamas$ {{ try_files /large.json =404; }}\n\
           }}\n\
         }}\n"
    )
}

/// Starts nginx on the bytes farm-apiserver answered; stopped when the returned `Farm` is dropped.
async fn spawn(nginx: &Path, farm: &Farm) -> Farm {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = farm.target.client(false);
    let answers = [("get", get(&farm.target, &client)), ("small", list(&farm.target, &client, "small"))];
    for (file, request) in answers.into_iter().chain([("large", list(&farm.target, &client, "large"))]) {
        let answer = request.send().await.expect("read");
        assert_eq!(answer.status(), 200);
        std::fs::write(dir.path().join(format!("{file}.json")), answer.bytes().await.expect("body")).expect("write");
    }
    let certs = farm_apiserver::tls::generate("bench-nginx-ca", &[]).expect("certificates");
    std::fs::write(dir.path().join("cert.pem"), &certs.cert_pem).expect("write");
    std::fs::write(dir.path().join("key.pem"), &certs.key_pem).expect("write");
    std::fs::create_dir(dir.path().join("tmp")).expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address").port();
    std::fs::write(dir.path().join("nginx.conf"), config(dir.path(), port)).expect("write");
    let mut child = Command::new(nginx)
        .args(["-e", "stderr", "-g", "daemon off;", "-p"])
        .arg(dir.path())
        .arg("-c")
        .arg(dir.path().join("nginx.conf"))
        .stdout(Stdio::null())
        .spawn()
        .expect("start nginx");
    let target = Target {
        base: format!("https://127.0.0.1:{port}"),
        ca: certs.ca_pem.into_bytes(),
        credentials: farm.target.credentials.clone(),
    };
    let probe = target.client(false);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !probe.get(target.url(&format!("{V1}/small/llamas"))).send().await.is_ok_and(|r| r.status() == 200) {
        assert!(Instant::now() < deadline, "nginx did not answer within 10 s");
        assert!(child.try_wait().is_ok_and(|exited| exited.is_none()), "nginx exited (its error is above)");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Farm { child, target, _dir: dir }
}

/// Runs the comparison and prints its table, or says why it cannot.
pub async fn compare(binary: &Path, phase: Duration) {
    let Some(nginx) = std::env::var_os("FARM_NGINX").filter(|n| !n.is_empty()) else {
        println!("nginx comparison skipped: FARM_NGINX names no nginx (make bench runs scripts/install-nginx.sh)");
        return;
    };
    let (farm, _) = start(binary, &[]).await;
    fill(&farm.target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    fill(&farm.target, &format!("{LLAMAS}/large/llamas"), 10_000, llama, "l").await;
    let nginx = spawn(Path::new(&nginx), &farm).await;
    println!(
        "large answers against nginx serving the same bytes over TLS (HTTP/1.1 keep-alive), {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("farm", "nginx");
    for l in &LOADS {
        ab::row(&farm, &nginx, l, phase).await;
    }
    println!();
}
