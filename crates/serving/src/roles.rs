//! The role check of one call, for a service whose calls admit different roles: its
//! [`banco_auth::AuthInterceptor`] admits every role any of its calls takes, and each
//! handler then admits its own.

use banco_auth::{Role, caller};
use tonic::{Request, Status};

/// Refuses, with PERMISSION_DENIED naming both roles, a caller whose role is not one of
/// `roles`.
pub fn require_role<T>(request: &Request<T>, roles: &[Role]) -> Result<(), Status> {
    let who = caller(request)?;
    if roles.contains(&who.role) {
        return Ok(());
    }
    let needed: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
    Err(Status::permission_denied(format!(
        "this call needs role {}; the token of `{}` has role {}",
        needed.join(" or "),
        who.sub,
        who.role
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use banco_auth::Claims;

    use super::*;

    fn request_of(role: Role) -> Request<()> {
        let mut request = Request::new(());
        request.extensions_mut().insert(Claims {
            sub: "mallory".to_owned(),
            role,
            aud: "banco".to_owned(),
            iat: 1,
            exp: 2,
            kid: "k".to_owned(),
            jti: "j".to_owned(),
        });
        request
    }

    #[test]
    fn a_call_admits_its_roles_and_refuses_others_naming_both() {
        let roles = [Role::Service, Role::Auditor];
        assert!(require_role(&request_of(Role::Auditor), &roles).is_ok());
        let refused = require_role(&request_of(Role::Player), &roles).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            refused.message(),
            "this call needs role service or auditor; the token of `mallory` has role player"
        );
        // Without the interceptor there is no caller: a server bug, never admitted.
        let bare = require_role(&Request::new(()), &roles).unwrap_err();
        assert_eq!(bare.code(), tonic::Code::Internal);
    }
}
