//! Warnings a write gathers before it fails. The kube-apiserver writes every warning a request
//! recorded in its context (those of decoding among them: unknown and duplicate fields) with
//! whatever it answers, a refusal included. A write handler runs in [`answered`]; what
//! [`record`] notes there goes out as `Warning` headers beside the failure's Status (a success
//! carries its own list of warnings, which holds these).

use crate::machinery::error::Result;
pub use crate::machinery::recorded_warnings::record;
use axum::response::{IntoResponse, Response};

/// Runs a write handler: its answer, or the Status of its failure with the warnings recorded.
pub async fn answered(write: impl Future<Output = Result<Response>>) -> Result<Response> {
    let (result, recorded) = crate::machinery::recorded_warnings::scope(write).await;
    let error = match result {
        Ok(response) => return Ok(response),
        Err(error) => error,
    };
    let mut response = error.into_response();
    for warning in super::warnings::headers(&recorded) {
        response.headers_mut().append(http::header::WARNING, warning);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::error::Error;

    #[tokio::test]
    async fn a_failed_write_carries_what_it_recorded_and_a_success_its_own() {
        let failed = answered(async {
            record(&["unknown field \"spec.horns\"".into()]);
            Err(Error::BadRequest("no".into()))
        })
        .await
        .unwrap();
        assert_eq!(failed.status(), 400);
        let warnings: Vec<_> = failed.headers().get_all(http::header::WARNING).iter().collect();
        assert_eq!(warnings, [r#"299 - "unknown field \"spec.horns\"""#]);
        let succeeded = answered(async {
            record(&["ignored".into()]);
            Ok(().into_response())
        })
        .await
        .unwrap();
        assert!(succeeded.headers().get(http::header::WARNING).is_none());
        record(&["outside a write: nowhere".into()]);
    }
}
