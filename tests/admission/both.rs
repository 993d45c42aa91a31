//! Requests sent alike to farm-apiserver's llamas (`farm.example.com`, through the aggregator)
//! and to the reference CustomResourceDefinition of the same Llama on the real kube-apiserver
//! (`ref.example.com`), and their answers made comparable: the reference group is written as
//! farm-apiserver's in codes, `Status` bodies and `Warning` headers.

use super::common::control_plane::eventually;
use serde_json::{Value, json};

/// One answer, with `ref.example.com` written as `farm.example.com`.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub code: u16,
    pub body: Value,
    pub warnings: Vec<String>,
}

/// Sends requests to both groups through the kube-apiserver, as its admin.
pub struct Both {
    base: String,
    client: reqwest::Client,
}

/// `value` with the reference group named as farm-apiserver's.
pub fn same_group(value: &Value) -> Value {
    serde_json::from_str(&value.to_string().replace("ref.example.com", "farm.example.com")).unwrap()
}

impl Both {
    /// Sends to the kube-apiserver at `base` with `client` (its admin).
    pub fn new(base: String, client: reqwest::Client) -> Self {
        Self { base, client }
    }

    pub async fn send(
        &self,
        group: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        kind: &str,
    ) -> Answer {
        let url = format!("{}/apis/{group}/{path}", self.base);
        let mut request = self.client.request(method, url).header("content-type", kind);
        if let Some(body) = body {
            request = request.body(body.to_string().replace("farm.example.com", group));
        }
        let response = request.send().await.unwrap();
        let code = response.status().as_u16();
        let warnings = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().unwrap().replace("ref.example.com", "farm.example.com"))
            .collect();
        let body = same_group(&response.json().await.unwrap_or(Value::Null));
        Answer { code, body, warnings }
    }

    /// Sends the request at v1alpha to farm-apiserver, then to the reference; both answers.
    pub async fn each(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        kind: &str,
    ) -> (Answer, Answer) {
        self.each_at("v1alpha", method, path, body, kind).await
    }

    /// [`Self::each`] at `version`.
    pub async fn each_at(
        &self,
        version: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        kind: &str,
    ) -> (Answer, Answer) {
        let path = format!("{version}/{path}");
        let path = path.as_str();
        let farm = self.send("farm.example.com", method.clone(), path, body, kind).await;
        let reference = self.send("ref.example.com", method, path, body, kind).await;
        (farm, reference)
    }

    pub async fn create(&self, namespace: &str, llama: &Value) -> (Answer, Answer) {
        self.each(reqwest::Method::POST, &format!("namespaces/{namespace}/llamas"), Some(llama), "application/json")
            .await
    }

    pub async fn get(&self, namespace: &str, name: &str) -> (Answer, Answer) {
        self.each(reqwest::Method::GET, &format!("namespaces/{namespace}/llamas/{name}"), None, "application/json")
            .await
    }
}

pub fn llama(name: &str, weight: f64, labels: Value) -> Value {
    json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama",
        "metadata": {"name": name, "labels": labels}, "spec": {"weight": weight, "height": 170}})
}

/// Waits until both servers answer `create` of `probe` in `namespace` with `code`, deleting
/// what they created meanwhile.
pub async fn until_both_answer(both: &Both, namespace: &str, probe: &Value, code: u16) {
    until_both(both, namespace, probe, |answer| answer.code == code).await;
}

/// Waits until both servers' answers to `create` of `probe` in `namespace` pass `check`,
/// deleting what they created meanwhile.
pub async fn until_both(both: &Both, namespace: &str, probe: &Value, check: impl Fn(&Answer) -> bool) {
    let name = probe["metadata"]["name"].as_str().unwrap().to_string();
    eventually("both servers to see the admission configuration", async || {
        let (farm, reference) = both.create(namespace, probe).await;
        let path = format!("namespaces/{namespace}/llamas/{name}");
        both.each(reqwest::Method::DELETE, &path, None, "application/json").await;
        check(&farm) && check(&reference)
    })
    .await;
}
