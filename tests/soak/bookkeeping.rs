//! What every task shares (the server, counters, failures) and the HTTP calls they make.

use super::*;

pub(crate) struct Shared {
    pub(crate) server: Arc<Server>,
    pub(crate) counts: Mutex<BTreeMap<&'static str, u64>>,
    pub(crate) failures: Mutex<Vec<String>>,
    pub(crate) failure_total: AtomicU64,
    /// Every write sets a weight never used before, so every acknowledged update and patch is a
    /// real change (a no-op update keeps its resourceVersion and is no event).
    pub(crate) weights: AtomicU64,
    /// Acknowledged writes so far (the slow watchers' clock).
    pub(crate) acknowledged: AtomicU64,
    /// Until when a 503 `ServiceUnavailable` is an expected answer (an etcd fault of the run).
    /// Whether an etcd outage is under way (from the leader's kill until etcd is whole again and
    /// a write has been acknowledged since): only then is a 503 an expected answer.
    pub(crate) in_etcd_outage: AtomicBool,
    /// Writes answered 503 during the outage, whose outcome is unknown (`obj` is what was sent).
    pub(crate) ambiguous: Mutex<Vec<Write>>,
    /// Requests to the API the server answered (a response head arrived), watches included: the
    /// audit log must hold exactly one `ResponseComplete` event for each.
    pub(crate) requests: AtomicU64,
}

impl Shared {
    pub(crate) fn count(&self, what: &'static str) {
        self.count_n(what, 1);
    }

    pub(crate) fn count_n(&self, what: &'static str, n: u64) {
        *self.counts.lock().unwrap().entry(what).or_default() += n;
    }

    pub(crate) fn fail(&self, message: String) {
        if self.failure_total.fetch_add(1, Ordering::SeqCst) < 5 {
            eprintln!("soak failure: {message}");
        }
        let mut kept = self.failures.lock().unwrap();
        if kept.len() < MAX_KEPT_FAILURES {
            kept.push(message);
        }
    }

    pub(crate) fn failed(&self) -> bool {
        self.failure_total.load(Ordering::SeqCst) > 0
    }

    /// Opens or closes the window in which a 503 `ServiceUnavailable` is an expected answer.
    pub(crate) fn set_etcd_outage(&self, under_way: bool) {
        self.in_etcd_outage.store(under_way, Ordering::SeqCst);
    }

    /// Whether `code` and `body` are a 503 `ServiceUnavailable` while an etcd outage is under way.
    pub(crate) fn in_outage(&self, code: u16, body: &Value) -> bool {
        code == 503 && is_status(body, 503, "ServiceUnavailable") && self.in_etcd_outage.load(Ordering::SeqCst)
    }

    pub(crate) fn next_weight(&self) -> f64 {
        (self.weights.fetch_add(1, Ordering::SeqCst) + 1) as f64
    }

    /// A client of its own (its own connection), trusting the server's CA and sending its token;
    /// `window` limits the HTTP/2 flow-control windows.
    pub(crate) fn client(&self, window: Option<u32>) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        headers
            .insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", self.server.token).parse().expect("header"));
        let mut builder = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&self.server.ca_pem).expect("CA PEM"))
            .default_headers(headers);
        if let Some(window) = window {
            builder = builder.http2_initial_stream_window_size(window).http2_initial_connection_window_size(window);
        }
        builder.build().expect("client")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// The latest resourceVersion, from a one-item LIST.
    pub(crate) async fn current_rv(&self, client: &reqwest::Client) -> Option<u64> {
        let path = "/apis/farm.example.com/v1alpha/llamas?limit=1";
        let (_, body) = self.call("LIST", client.get(self.url(path))).await.ok()?;
        body["metadata"]["resourceVersion"].as_str()?.parse().ok()
    }
}

impl Shared {
    /// Sends a request and parses its JSON answer: `(status, body)`; a transport error, a body
    /// that is not JSON or no answer within [`STALL`] is an `Err` describing it. An answered
    /// request is counted in [`Shared::requests`].
    pub(crate) async fn call(&self, what: &str, request: reqwest::RequestBuilder) -> Result<(u16, Value), String> {
        let response = request.timeout(STALL).send().await.map_err(|e| format!("{what}: transport error: {e:?}"))?;
        self.requests.fetch_add(1, Ordering::SeqCst);
        read_answer(what, response).await
    }
}

/// The status and JSON body of `response`.
async fn read_answer(what: &str, response: reqwest::Response) -> Result<(u16, Value), String> {
    let code = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| format!("{what}: HTTP {code}, reading the body: {e:?}"))?;
    let body = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{what}: HTTP {code} with a body that is not JSON ({e}): {}", snippet(&bytes)))?;
    Ok((code, body))
}

/// Whether `body` is a failure `Status` with `code` and `reason`.
pub(crate) fn is_status(body: &Value, code: u16, reason: &str) -> bool {
    body["kind"] == "Status" && body["status"] == "Failure" && body["code"] == code && body["reason"] == reason
}

pub(crate) fn unexpected(what: &str, code: u16, body: &Value) -> String {
    format!("{what}: unexpected HTTP {code}: {}", snippet(body.to_string().as_bytes()))
}
