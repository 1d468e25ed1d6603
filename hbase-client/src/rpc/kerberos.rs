//! Kerberos credentials and GSSAPI contexts, through the system's MIT Kerberos.
//!
//! A keytab login asks the KDC for a ticket-granting ticket with libkrb5
//! (`krb5_get_init_creds_keytab`, so a refusal comes back with the KDC's own words) into a
//! private `MEMORY:` credential cache of this process, which GSSAPI then uses
//! (`gss_acquire_cred_from`). Before each new connection the client checks the ticket: past 80%
//! of its lifetime (Hadoop's `UserGroupInformation` rule) it logs in again from the keytab.
//! Connections already open keep working either way: HBase checks tickets only when a
//! connection authenticates.

use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::Cred;
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_KRB5_PRINCIPAL};

use super::sasl::GssMechanism;
use crate::error::{Error, Result};
use crate::security::{Kerberos, Login, SecurityCounters};

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    clippy::all
)]
mod krb5 {
    include!(concat!(env!("OUT_DIR"), "/krb5.rs"));
}

/// `GSS_KRB5_NT_PRINCIPAL_NAME` (1.2.840.113554.1.2.2.1): a principal name taken as written.
const NT_KRB5_PRINCIPAL: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01";
/// Renew once this share of the ticket's lifetime has passed.
const RENEW_AT: f64 = 0.8;

fn auth_error(message: String) -> Error {
    Error::Authentication {
        server: None,
        message,
    }
}

/// One libkrb5 context, freed on drop.
struct Krb5Context(krb5::krb5_context);

impl Krb5Context {
    fn new() -> Result<Krb5Context> {
        let mut ctx = ptr::null_mut();
        // SAFETY: krb5_init_context writes a new context to `ctx` or returns an error code.
        let code = unsafe { krb5::krb5_init_context(&mut ctx) };
        if code != 0 {
            return Err(auth_error(format!(
                "cannot initialise Kerberos (error {code}): is krb5.conf (KRB5_CONFIG) readable?"
            )));
        }
        Ok(Krb5Context(ctx))
    }

    /// The library's message for `code`, as `kinit` prints it.
    fn message(&self, code: krb5::krb5_error_code) -> String {
        // SAFETY: the context is live; the returned string is freed with the matching call.
        unsafe {
            let msg = krb5::krb5_get_error_message(self.0, code);
            if msg.is_null() {
                return format!("Kerberos error {code}");
            }
            let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
            krb5::krb5_free_error_message(self.0, msg);
            text
        }
    }
}

impl Drop for Krb5Context {
    fn drop(&mut self) {
        // SAFETY: created by krb5_init_context, freed once.
        unsafe { krb5::krb5_free_context(self.0) }
    }
}

/// A private memory credential cache, destroyed when the last ticket using it goes.
struct MemoryCache {
    name: String,
}

impl Drop for MemoryCache {
    fn drop(&mut self) {
        let Ok(ctx) = Krb5Context::new() else { return };
        let Ok(name) = CString::new(self.name.as_str()) else {
            return;
        };
        let mut cc = ptr::null_mut();
        // SAFETY: resolve then destroy (which also closes) a cache this process made.
        unsafe {
            if krb5::krb5_cc_resolve(ctx.0, name.as_ptr(), &mut cc) == 0 {
                krb5::krb5_cc_destroy(ctx.0, cc);
            }
        }
    }
}

/// A usable initiator credential and what is known of its ticket.
pub(crate) struct Ticket {
    cred: Cred,
    principal: String,
    issued: SystemTime,
    expires: Option<SystemTime>,
    _cache: Option<MemoryCache>,
}

impl Ticket {
    pub(crate) fn principal(&self) -> &str {
        &self.principal
    }

    fn renewal_due(&self, now: SystemTime) -> bool {
        renewal_due(self.issued, self.expires, now)
    }
}

/// Due for a new login: past 80% of the ticket's lifetime, or expired. A ticket of unknown
/// expiry (none so far) is never renewed here.
fn renewal_due(issued: SystemTime, expires: Option<SystemTime>, now: SystemTime) -> bool {
    let Some(expires) = expires else {
        return false;
    };
    let life = expires.duration_since(issued).unwrap_or_default();
    now >= issued + life.mul_f64(RENEW_AT)
}

static CACHE_SEQ: AtomicU64 = AtomicU64::new(0);

fn from_epoch(secs: i32) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs.max(0) as u64)
}

/// What a KDC refusal usually means, for the codes whose library text does not say it.
fn login_hint(code: krb5::krb5_error_code) -> &'static str {
    match i64::from(code) {
        c if c == krb5::KRB5KRB_AP_ERR_BAD_INTEGRITY as i64
            || c == krb5::KRB5KDC_ERR_PREAUTH_FAILED as i64 =>
        {
            " (the keytab's key is not the one the KDC has: the keytab is outdated, e.g. the \
             principal's key was changed after it was exported)"
        }
        c if c == krb5::KRB5KDC_ERR_KEY_EXP as i64 => {
            " (the principal's key has expired on the KDC)"
        }
        _ => "",
    }
}

/// Logs in as `principal` with `keytab`: a TGT from the KDC into a new memory cache.
fn keytab_login(principal: &str, keytab: &std::path::Path) -> Result<Ticket> {
    let what = || {
        format!(
            "Kerberos login of {principal} with keytab {}",
            keytab.display()
        )
    };
    match std::fs::metadata(keytab) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(auth_error(format!("{}: not a file", what()))),
        Err(e) => {
            return Err(auth_error(format!(
                "{}: cannot read the keytab: {e}",
                what()
            )))
        }
    }
    let ctx = Krb5Context::new()?;
    let c_principal = CString::new(principal)
        .map_err(|_| Error::InvalidInput("Kerberos principal contains NUL".into()))?;
    let c_keytab = CString::new(format!("FILE:{}", keytab.display()))
        .map_err(|_| Error::InvalidInput("keytab path contains NUL".into()))?;
    let seq = CACHE_SEQ.fetch_add(1, Ordering::Relaxed);
    let cache_name = format!("MEMORY:hbase-rs-{}-{seq}", std::process::id());
    let c_cache = CString::new(cache_name.as_str()).expect("no NUL");
    let (issued, expires) = unsafe {
        // SAFETY: every object is created by libkrb5 on `ctx` and released below on every
        // path; `creds` is zero-initialised as krb5_get_init_creds_keytab expects.
        let mut princ = ptr::null_mut();
        let code = krb5::krb5_parse_name(ctx.0, c_principal.as_ptr(), &mut princ);
        if code != 0 {
            return Err(auth_error(format!(
                "{}: bad principal name: {}",
                what(),
                ctx.message(code)
            )));
        }
        let mut kt = ptr::null_mut();
        let code = krb5::krb5_kt_resolve(ctx.0, c_keytab.as_ptr(), &mut kt);
        if code != 0 {
            krb5::krb5_free_principal(ctx.0, princ);
            return Err(auth_error(format!("{}: {}", what(), ctx.message(code))));
        }
        let mut cc = ptr::null_mut();
        let code = krb5::krb5_cc_resolve(ctx.0, c_cache.as_ptr(), &mut cc);
        if code != 0 {
            krb5::krb5_kt_close(ctx.0, kt);
            krb5::krb5_free_principal(ctx.0, princ);
            return Err(auth_error(format!(
                "{}: cannot make a memory credential cache: {}",
                what(),
                ctx.message(code)
            )));
        }
        let mut opt = ptr::null_mut();
        let mut code = krb5::krb5_get_init_creds_opt_alloc(ctx.0, &mut opt);
        if code == 0 {
            code = krb5::krb5_get_init_creds_opt_set_out_ccache(ctx.0, opt, cc);
        }
        let mut creds = krb5::krb5_creds::default();
        if code == 0 {
            code =
                krb5::krb5_get_init_creds_keytab(ctx.0, &mut creds, princ, kt, 0, ptr::null(), opt);
        }
        let times = (
            creds.times.starttime,
            creds.times.authtime,
            creds.times.endtime,
        );
        if code == 0 {
            krb5::krb5_free_cred_contents(ctx.0, &mut creds);
        }
        if !opt.is_null() {
            krb5::krb5_get_init_creds_opt_free(ctx.0, opt);
        }
        krb5::krb5_cc_close(ctx.0, cc);
        krb5::krb5_kt_close(ctx.0, kt);
        krb5::krb5_free_principal(ctx.0, princ);
        if code != 0 {
            // Remove the empty cache again.
            drop(MemoryCache { name: cache_name });
            return Err(auth_error(format!(
                "{}: {}{}",
                what(),
                ctx.message(code),
                login_hint(code)
            )));
        }
        let start = if times.0 != 0 { times.0 } else { times.1 };
        (from_epoch(start), from_epoch(times.2))
    };
    let cache = MemoryCache { name: cache_name };
    let cred = acquire_from_cache(Some(principal), Some(&cache.name)).map_err(|e| {
        auth_error(format!(
            "{}: the ticket was issued but GSSAPI cannot use it: {e}",
            what()
        ))
    })?;
    Ok(Ticket {
        cred,
        principal: principal.to_string(),
        issued,
        expires: Some(expires),
        _cache: Some(cache),
    })
}

/// A GSSAPI initiator credential for `principal` (or the cache's own) from credential cache
/// `cache` (or the default one).
fn acquire_from_cache(
    principal: Option<&str>,
    cache: Option<&str>,
) -> std::result::Result<Cred, String> {
    use libgssapi_sys as gss;
    let mut minor = 0u32;
    let mut name: gss::gss_name_t = ptr::null_mut();
    if let Some(principal) = principal {
        let mut name_type = gss::gss_OID_desc {
            length: NT_KRB5_PRINCIPAL.len() as u32,
            elements: NT_KRB5_PRINCIPAL.as_ptr() as *mut _,
        };
        let mut buf = gss::gss_buffer_desc {
            length: principal.len(),
            value: principal.as_ptr() as *mut _,
        };
        // SAFETY: the buffer and OID outlive the call; the name is released below.
        let major =
            unsafe { gss::gss_import_name(&mut minor, &mut buf, &mut name_type, &mut name) };
        if major != 0 {
            return Err(gss_status(major, minor));
        }
    }
    let key = CString::new("ccache").expect("no NUL");
    let value = cache.map(|c| CString::new(c).map_err(|_| "cache name contains NUL".to_string()));
    let value = value.transpose()?;
    let mut elements = value
        .iter()
        .map(|v| gss::gss_key_value_element_desc {
            key: key.as_ptr(),
            value: v.as_ptr(),
        })
        .collect::<Vec<_>>();
    let store = gss::gss_key_value_set_desc {
        count: elements.len() as u32,
        elements: elements.as_mut_ptr(),
    };
    let mut cred: gss::gss_cred_id_t = ptr::null_mut();
    // SAFETY: all inputs outlive the call; on success `cred` is owned by the returned Cred.
    let major = unsafe {
        gss::gss_acquire_cred_from(
            &mut minor,
            name,
            gss::_GSS_C_INDEFINITE,
            ptr::null_mut(),
            gss::GSS_C_INITIATE as i32,
            &store,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if !name.is_null() {
        let mut m = 0u32;
        // SAFETY: imported above, released once.
        unsafe { gss::gss_release_name(&mut m, &mut name) };
    }
    if major != 0 {
        return Err(gss_status(major, minor));
    }
    // SAFETY: gss_acquire_cred_from handed us sole ownership of `cred`.
    Ok(unsafe { Cred::from_c(cred) })
}

fn gss_status(major: u32, minor: u32) -> String {
    libgssapi::error::Error {
        major: libgssapi::error::MajorFlags::from_bits_retain(major),
        minor,
    }
    .to_string()
}

/// Credentials from an existing ticket cache.
fn cache_login(cache: Option<&str>) -> Result<Ticket> {
    let which = cache.map_or_else(
        || "the default credential cache (KRB5CCNAME)".to_string(),
        |c| format!("credential cache {c}"),
    );
    let cred = acquire_from_cache(None, cache)
        .map_err(|e| auth_error(format!("no usable Kerberos ticket in {which}: {e}")))?;
    let lifetime = cred.lifetime().unwrap_or_default();
    if lifetime.is_zero() {
        return Err(auth_error(format!(
            "the Kerberos ticket in {which} has expired (run kinit)"
        )));
    }
    let principal = cred
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "(unknown principal)".into());
    let now = SystemTime::now();
    Ok(Ticket {
        cred,
        principal,
        issued: now,
        expires: Some(now + lifetime),
        _cache: None,
    })
}

/// The client's Kerberos identity: the current ticket, renewed from the keytab when due.
pub(crate) struct KerberosAuth {
    settings: Kerberos,
    current: Mutex<Arc<Ticket>>,
    /// One login at a time; tasks that find a fresh ticket after waiting use it.
    relogin: tokio::sync::Mutex<()>,
    counters: Arc<SecurityCounters>,
}

impl std::fmt::Debug for KerberosAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KerberosAuth")
            .field("login", &self.settings.login)
            .finish()
    }
}

fn login_blocking(login: &Login) -> Result<Ticket> {
    match login {
        Login::Keytab { principal, keytab } => keytab_login(principal, keytab),
        Login::TicketCache { cache } => cache_login(cache.as_deref()),
    }
}

async fn login(login: &Login) -> Result<Ticket> {
    let login = login.clone();
    // The KDC exchange blocks.
    tokio::task::spawn_blocking(move || login_blocking(&login))
        .await
        .map_err(|e| auth_error(format!("Kerberos login task failed: {e}")))?
}

impl KerberosAuth {
    /// Logs in (at client start, so bad credentials fail `Client::connect`).
    pub(crate) async fn new(
        settings: Kerberos,
        counters: Arc<SecurityCounters>,
    ) -> Result<KerberosAuth> {
        let ticket = login(&settings.login).await?;
        counters.logged_in(&ticket.principal, ticket.expires, false);
        tracing::info!(principal = %ticket.principal, expires = ?ticket.expires, "Kerberos login");
        Ok(KerberosAuth {
            settings,
            current: Mutex::new(Arc::new(ticket)),
            relogin: tokio::sync::Mutex::new(()),
            counters,
        })
    }

    pub(crate) fn settings(&self) -> &Kerberos {
        &self.settings
    }

    fn current(&self) -> Arc<Ticket> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// A ticket good for a new connection: the current one, or a new login when it is due.
    /// A failed renewal keeps the old ticket while it is still valid.
    pub(crate) async fn ticket(&self) -> Result<Arc<Ticket>> {
        let ticket = self.current();
        if !ticket.renewal_due(SystemTime::now()) {
            return Ok(ticket);
        }
        let _one = self.relogin.lock().await;
        let ticket = self.current();
        let now = SystemTime::now();
        if !ticket.renewal_due(now) {
            return Ok(ticket);
        }
        match login(&self.settings.login).await {
            Ok(fresh) => {
                // A ticket cache read again may still hold the same ticket.
                let renewed = fresh.expires > ticket.expires;
                if renewed {
                    tracing::info!(
                        principal = %fresh.principal,
                        old_expiry = ?ticket.expires,
                        new_expiry = ?fresh.expires,
                        "Kerberos ticket renewed"
                    );
                }
                self.counters
                    .logged_in(&fresh.principal, fresh.expires, renewed);
                let fresh = Arc::new(fresh);
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = fresh.clone();
                Ok(fresh)
            }
            Err(e) if ticket.expires.is_some_and(|x| x > now) => {
                tracing::warn!(error = %e, "Kerberos renewal failed; the current ticket is still valid");
                Ok(ticket)
            }
            Err(e) => Err(e),
        }
    }
}

/// A GSSAPI Kerberos context towards one server principal.
pub(crate) struct GssContext {
    ctx: ClientCtx,
    // Keeps the credential cache alive while the context may still need it.
    _ticket: Arc<Ticket>,
}

impl GssContext {
    /// A context for `target` (`service/host@REALM`) and its first token. The first step may ask
    /// the KDC for a service ticket, so it runs on a blocking thread.
    pub(crate) async fn start(
        ticket: Arc<Ticket>,
        target: String,
    ) -> Result<(GssContext, Vec<u8>)> {
        tokio::task::spawn_blocking(move || {
            let refused = |e: libgssapi::error::Error| Error::Authentication {
                server: None,
                message: format!(
                    "GSSAPI could not start a context as {} for server principal {target}: {e}",
                    ticket.principal
                ),
            };
            let name =
                Name::new(target.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)).map_err(refused)?;
            let mut ctx = ClientCtx::new(
                Some(ticket.cred.clone()),
                name,
                CtxFlags::GSS_C_MUTUAL_FLAG
                    | CtxFlags::GSS_C_INTEG_FLAG
                    | CtxFlags::GSS_C_CONF_FLAG,
                Some(GSS_MECH_KRB5),
            );
            let token = ctx.step(None, None).map_err(refused)?.ok_or_else(|| {
                Error::Protocol(format!("GSSAPI made no initial token for {target}"))
            })?;
            Ok((
                GssContext {
                    ctx,
                    _ticket: ticket,
                },
                token.to_vec(),
            ))
        })
        .await
        .map_err(|e| auth_error(format!("GSSAPI task failed: {e}")))?
    }
}

impl GssMechanism for GssContext {
    fn step(&mut self, token: Option<&[u8]>) -> std::result::Result<Option<Vec<u8>>, String> {
        self.ctx
            .step(token, None)
            .map(|t| t.map(|b| b.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn is_established(&self) -> bool {
        self.ctx.is_complete()
    }

    fn wrap(&mut self, data: &[u8], encrypt: bool) -> std::result::Result<Vec<u8>, String> {
        self.ctx
            .wrap(encrypt, data)
            .map(|b| b.to_vec())
            .map_err(|e| e.to_string())
    }

    fn unwrap(&mut self, token: &[u8]) -> std::result::Result<Vec<u8>, String> {
        self.ctx
            .unwrap(token)
            .map(|b| b.to_vec())
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_at_eighty_percent_of_the_lifetime() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let end = Some(t0 + Duration::from_secs(100));
        assert!(!renewal_due(t0, end, t0));
        assert!(!renewal_due(t0, end, t0 + Duration::from_secs(79)));
        assert!(renewal_due(t0, end, t0 + Duration::from_secs(80)));
        assert!(
            renewal_due(t0, end, t0 + Duration::from_secs(500)),
            "expired"
        );
        assert!(!renewal_due(t0, None, t0 + Duration::from_secs(500)));
    }

    #[test]
    fn kdc_refusals_get_a_hint() {
        assert!(
            login_hint(krb5::KRB5KRB_AP_ERR_BAD_INTEGRITY as krb5::krb5_error_code)
                .contains("outdated")
        );
        assert!(
            login_hint(krb5::KRB5KDC_ERR_PREAUTH_FAILED as krb5::krb5_error_code)
                .contains("outdated")
        );
        assert_eq!(login_hint(0), "");
    }
}
