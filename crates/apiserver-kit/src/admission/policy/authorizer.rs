//! The authorizer library's checks (`authorizer.group('').resource('pods').check('get')`)
//! answered by the server's delegated authorization: a SubjectAccessReview of the cluster, cached
//! as the server's own requests' are. CEL evaluates synchronously, so a check waits for its
//! review on the runtime's worker thread (which tokio's `block_in_place` hands over meanwhile).

use crate::auth::attributes::Attributes;
use crate::auth::delegated::Delegated;
use crate::cel::authz::{Authorizer, Decision, Question, User};
use crate::machinery::error::Error;
use crate::machinery::user::UserInfo;
use std::sync::Arc;

/// Checks asked of the cluster through `Delegated`.
pub struct DelegatedChecks(pub Arc<Delegated>);

impl Authorizer for DelegatedChecks {
    fn authorize(&self, user: &User, verb: &str, question: &Question) -> Decision {
        let attributes = match question {
            Question::Resource(r) => Attributes::Resource {
                verb: verb.to_string(),
                group: r.group.clone(),
                version: "*".into(),
                resource: r.resource.clone(),
                subresource: r.subresource.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
            },
            Question::Path(path) => Attributes::NonResource { verb: verb.to_string(), path: path.clone() },
        };
        let user = UserInfo::from(user);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return failed("no runtime to ask the authorizer on");
        };
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return failed("the authorizer is asked only on a multi-threaded runtime");
        }
        let asked = async { self.0.authorize(&user, &attributes).await.map_err(Box::new) };
        let answer = tokio::task::block_in_place(|| runtime.block_on(asked));
        match answer {
            Ok(reason) => Decision { allowed: true, reason, error: None },
            Err(denied) => match denied.error {
                Error::Forbidden(_) => Decision { allowed: false, reason: denied.reason, error: None },
                other => Decision { allowed: false, reason: denied.reason, error: Some(other.to_string()) },
            },
        }
    }
}

fn failed(message: &str) -> Decision {
    Decision { allowed: false, reason: String::new(), error: Some(message.to_string()) }
}
