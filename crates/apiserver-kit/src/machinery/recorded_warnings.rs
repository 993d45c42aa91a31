//! Warnings a write records before it fails: the kube-apiserver writes every warning a request
//! recorded in its context with whatever it answers, a refusal included. The API layer runs a
//! write in [`scope`] and answers what [`record`] noted there (`crate::api::warning_recorder`);
//! any layer below records into it (decoding, admission policies' `Warn` actions).

use std::cell::RefCell;

tokio::task_local! {
    static RECORDED: RefCell<Vec<String>>;
}

/// Notes `warnings` for the answer of the write being handled (nothing outside a write).
pub fn record(warnings: &[String]) {
    let _ = RECORDED.try_with(|recorded| recorded.borrow_mut().extend(warnings.iter().cloned()));
}

/// Runs `write`, returning its output and the warnings it recorded.
pub async fn scope<T>(write: impl Future<Output = T>) -> (T, Vec<String>) {
    RECORDED
        .scope(RefCell::new(Vec::new()), async {
            let output = write.await;
            (output, RECORDED.with(RefCell::take))
        })
        .await
}
