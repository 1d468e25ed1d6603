//! With the `kerberos` feature: bindings to the few libkrb5 functions the client logs in with
//! (a keytab login into a private memory credential cache, with the KDC's own error messages).
//! GSSAPI itself comes from the libgssapi crate.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "kerberos")]
    krb5_bindings();
}

#[cfg(feature = "kerberos")]
fn krb5_bindings() {
    let lib = pkg_config::Config::new()
        .probe("mit-krb5")
        .or_else(|_| pkg_config::Config::new().probe("krb5"))
        .expect(
            "the kerberos feature needs MIT Kerberos development files (pkg-config mit-krb5; \
             Debian: apt-get install libkrb5-dev libclang-dev), or build without it \
             (--no-default-features --features tls)",
        );
    let include_args = lib
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()));
    let bindings = bindgen::Builder::default()
        .header_contents("hbase_krb5.h", "#include <krb5.h>\n")
        .clang_args(include_args)
        .allowlist_function(
            "krb5_(init_context|free_context|parse_name|free_principal|kt_resolve|kt_close|\
             cc_resolve|cc_destroy|cc_close|\
             get_init_creds_opt_alloc|get_init_creds_opt_free|get_init_creds_opt_set_out_ccache|\
             get_init_creds_keytab|free_cred_contents|get_error_message|free_error_message)",
        )
        .allowlist_type("krb5_creds")
        .allowlist_var(
            "KRB5KRB_AP_ERR_BAD_INTEGRITY|KRB5KDC_ERR_PREAUTH_FAILED|KRB5KDC_ERR_KEY_EXP",
        )
        .derive_default(true)
        .layout_tests(false)
        .generate()
        .expect("generate libkrb5 bindings");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("krb5.rs");
    bindings.write_to_file(out).expect("write libkrb5 bindings");
}
