# shellcheck shell=bash
# Security modes of scripts/hbase-local: sourced by it, not run on its own.
#
# HBASE_LOCAL_SECURITY=kerberos
#   A real MIT Kerberos KDC (Debian's krb5-kdc and krb5-admin-server: krb5kdc, kdb5_util,
#   kadmin.local) runs beside HBase on 127.0.0.1:$HBASE_LOCAL_KDC_PORT with a fresh database
#   per start. Principals and keytabs are created on start (run/security/kerberos):
#     hbase/localhost@REALM   hbase.keytab      master, region servers, their ZooKeeper client
#     zookeeper/localhost@REALM zookeeper.keytab the embedded ZooKeeper server (SASL)
#     client@REALM            client.keytab     a client (also kinit'ed into client.ccache)
#     short@REALM             short.keytab      a client whose tickets live
#                                               $HBASE_LOCAL_SHORT_TICKET_LIFETIME seconds
#     stale@REALM             stale.keytab      a keytab whose key was changed afterwards
#     ghost@REALM             ghost.keytab      a keytab of a principal deleted afterwards
#   HBase runs with hbase.security.authentication=kerberos, hbase.rpc.protection =
#   $HBASE_LOCAL_RPC_PROTECTION (default: all three levels offered, the client picks), and
#   a SASL-secured embedded ZooKeeper, so HBase puts ACLs on its znodes.
# HBASE_LOCAL_SECURITY=tls
#   HBase 2.6's native RPC TLS (Netty): a CA, a server certificate (SAN IP:127.0.0.1), a
#   client certificate and a second, unrelated CA are generated with openssl on start
#   (run/security/tls, PEM); plaintext connections are refused.
#
# HBASE_LOCAL_SECURITY=kerberos,tls
#   Both at once (the benchmark cluster): Kerberos over TLS; the certificate then also names
#   localhost, the name the servers advertise under Kerberos.
#
# Either way run/security/security.env lists what a client needs (KEY=value lines) and
# run/client-conf/hbase-site.xml is a client's site file (for `ycsb -cp` or a Java client).

SECURITY=${HBASE_LOCAL_SECURITY:-none}
RPC_PROTECTION=${HBASE_LOCAL_RPC_PROTECTION:-authentication,integrity,privacy}
KDC_PORT=${HBASE_LOCAL_KDC_PORT:-17088}
REALM=${HBASE_LOCAL_REALM:-HBASE.TEST}
SHORT_TICKET_LIFETIME=${HBASE_LOCAL_SHORT_TICKET_LIFETIME:-30}
TLS_CLIENT_AUTH=${HBASE_LOCAL_TLS_CLIENT_AUTH:-NEED}

SEC_DIR="$RUN_DIR/security"
KRB_DIR="$SEC_DIR/kerberos"
TLS_DIR="$SEC_DIR/tls"
SEC_ENV_FILE="$SEC_DIR/security.env"
CLIENT_CONF_DIR="$RUN_DIR/client-conf"
# The stop command's client: the server's site plus a keytab login (HBASE-20886 keys).
ADMIN_CONF_DIR="$RUN_DIR/admin-conf"
# The name the servers advertise in secure modes (over HBASE_LOCAL_HOSTNAME). Kerberos: "localhost", because a Java client
# (the region servers' own, to the master) takes the host part of a server principal from the
# reverse lookup of the server's address, and 127.0.0.1 resolves back to localhost. TLS: the
# servers keep 127.0.0.1, the IP address their certificate names.
# Whether mode $1 (kerberos, tls) is among HBASE_LOCAL_SECURITY's.
sec_has() { [[ ",$SECURITY," == *",$1,"* ]]; }

SERVER_HOST=127.0.0.1
sec_has kerberos && SERVER_HOST=localhost

security_check_settings() {
  [[ -n "$SECURITY" ]] || SECURITY=none
  local mode
  for mode in ${SECURITY//,/ }; do
    case "$mode" in
      none|kerberos|tls) ;;
      *) die "HBASE_LOCAL_SECURITY must be none, kerberos, tls or kerberos,tls (got '$SECURITY')" ;;
    esac
  done
  if sec_has kerberos; then
    [[ "$KDC_PORT" =~ ^[0-9]+$ ]] || die "HBASE_LOCAL_KDC_PORT must be a port number (got '$KDC_PORT')"
    [[ "$REALM" =~ ^[A-Z0-9.-]+$ ]] || die "HBASE_LOCAL_REALM must be upper case (got '$REALM')"
    [[ "$SHORT_TICKET_LIFETIME" =~ ^[0-9]+$ ]] \
      || die "HBASE_LOCAL_SHORT_TICKET_LIFETIME must be seconds (got '$SHORT_TICKET_LIFETIME')"
    local p
    for p in ${RPC_PROTECTION//,/ }; do
      case "$p" in authentication|integrity|privacy) ;;
        *) die "HBASE_LOCAL_RPC_PROTECTION: '$p' is not authentication, integrity or privacy" ;;
      esac
    done
    local tool
    for tool in krb5kdc kdb5_util kadmin.local kinit; do
      command -v "$tool" >/dev/null 2>&1 \
        || die "$tool not found: the Kerberos mode needs MIT Kerberos (Debian: apt-get install krb5-kdc krb5-admin-server krb5-user)"
    done
    if port_in_use "$KDC_PORT"; then
      die "port $KDC_PORT (KDC) is already in use; set HBASE_LOCAL_KDC_PORT"
    fi
  fi
  if sec_has tls; then
    command -v openssl >/dev/null 2>&1 || die "openssl not found: the TLS mode generates its certificates with it"
    case "$TLS_CLIENT_AUTH" in NONE|WANT|NEED) ;;
      *) die "HBASE_LOCAL_TLS_CLIENT_AUTH must be NONE, WANT or NEED (got '$TLS_CLIENT_AUTH')" ;;
    esac
  fi
}

# ---------------------------------------------------------------------------------------------
# Kerberos: an MIT KDC


kadmin_q() {
  env KRB5_CONFIG="$KRB_DIR/krb5.conf" KRB5_KDC_PROFILE="$KRB_DIR/kdc.conf" \
    kadmin.local -r "$REALM" -q "$1" >>"$KRB_DIR/kadmin.log" 2>&1 \
    || die "kadmin.local -q '$1' failed (see $KRB_DIR/kadmin.log)"
  # kadmin.local exits 0 even when the query fails: look at what it said
  if tail -n 3 "$KRB_DIR/kadmin.log" | grep -qiE 'error|failed|while '; then
    tail -n 3 "$KRB_DIR/kadmin.log" >&2
    die "kadmin.local -q '$1' failed"
  fi
}

kerberos_write_files() {
  mkdir -p "$KRB_DIR"
  chmod 700 "$KRB_DIR"
  cat >"$KRB_DIR/krb5.conf" <<EOF
# Generated by scripts/hbase-local: the realm of one local run. Clients: KRB5_CONFIG=this file.
[libdefaults]
  default_realm = $REALM
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
  ticket_lifetime = 10h
  forwardable = false
[realms]
  $REALM = {
    kdc = 127.0.0.1:$KDC_PORT
  }
[domain_realm]
  127.0.0.1 = $REALM
  localhost = $REALM
EOF
  cat >"$KRB_DIR/kdc.conf" <<EOF
# Generated by scripts/hbase-local.
[kdcdefaults]
  kdc_ports = $KDC_PORT
  kdc_tcp_ports = $KDC_PORT
[realms]
  $REALM = {
    database_name = $KRB_DIR/principal
    key_stash_file = $KRB_DIR/stash
    acl_file = $KRB_DIR/kadm5.acl
    max_life = 10h
    max_renewable_life = 0
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }
[logging]
  kdc = FILE:$KRB_DIR/kdc.log
EOF
  : >"$KRB_DIR/kadm5.acl"
  cat >"$KRB_DIR/jaas.conf" <<EOF
/* Generated by scripts/hbase-local: the embedded ZooKeeper server and HBase's ZooKeeper client. */
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="$KRB_DIR/zookeeper.keytab" storeKey=true useTicketCache=false
  principal="zookeeper/localhost@$REALM";
};
Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="$KRB_DIR/hbase.keytab" storeKey=true useTicketCache=false
  principal="hbase/$SERVER_HOST@$REALM";
};
EOF
}

kdc_pid() {
  local pid
  [[ -f "$KRB_DIR/kdc.pid" ]] || return 1
  pid=$(<"$KRB_DIR/kdc.pid")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "krb5kdc.*$KRB_DIR/kdc.pid" || return 1
  printf '%s\n' "$pid"
}

kdc_start() {
  kerberos_write_files
  say "Kerberos: creating realm $REALM (KDC on 127.0.0.1:$KDC_PORT) ..."
  env KRB5_CONFIG="$KRB_DIR/krb5.conf" KRB5_KDC_PROFILE="$KRB_DIR/kdc.conf" \
    kdb5_util create -s -r "$REALM" -P "hbase-local-$$-$RANDOM" -W >"$KRB_DIR/kdb5_util.log" 2>&1 \
    || { cat "$KRB_DIR/kdb5_util.log" >&2; die "kdb5_util create failed"; }

  local short="$SHORT_TICKET_LIFETIME seconds"
  kadmin_q "addprinc -randkey hbase/$SERVER_HOST@$REALM"
  kadmin_q "addprinc -randkey zookeeper/localhost@$REALM"
  kadmin_q "addprinc -randkey client@$REALM"
  kadmin_q "addprinc -randkey -maxlife \"$short\" short@$REALM"
  kadmin_q "addprinc -randkey stale@$REALM"
  kadmin_q "addprinc -randkey ghost@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/hbase.keytab hbase/$SERVER_HOST@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/zookeeper.keytab zookeeper/localhost@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/client.keytab client@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/short.keytab short@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/stale.keytab stale@$REALM"
  kadmin_q "ktadd -k $KRB_DIR/ghost.keytab ghost@$REALM"
  # stale.keytab now holds an outdated key, ghost.keytab a principal the KDC no longer knows
  kadmin_q "cpw -randkey stale@$REALM"
  kadmin_q "delprinc -force ghost@$REALM"

  (
    exec 9>&-
    exec setsid nohup env KRB5_CONFIG="$KRB_DIR/krb5.conf" KRB5_KDC_PROFILE="$KRB_DIR/kdc.conf" \
      krb5kdc -n -P "$KRB_DIR/kdc.pid" >"$KRB_DIR/kdc.out" 2>&1 </dev/null
  ) &
  local launcher=$! deadline=$(( $(date +%s) + START_TIMEOUT ))
  disown 2>/dev/null || true
  # Until it listens (a KDC that has written its pid file may not listen yet: kinit would
  # then fail the start), or its process is gone; bounded like any start, not by a fixed 10 s.
  until kdc_pid >/dev/null && port_in_use "$KDC_PORT"; do
    if ! kill -0 "$launcher" 2>/dev/null || (( $(date +%s) >= deadline )); then
      cat "$KRB_DIR/kdc.out" "$KRB_DIR/kdc.log" >&2 2>/dev/null
      kdc_stop; kill -KILL "$launcher" 2>/dev/null || true
      die "the KDC did not start listening on 127.0.0.1:$KDC_PORT"
    fi
    sleep 0.1
  done
  # a ticket cache for clients that log in from one (and proof that the KDC answers); a few
  # tries, as one slow answer on a loaded machine must not fail the start
  local try
  for (( try = 1; ; try++ )); do
    env KRB5_CONFIG="$KRB_DIR/krb5.conf" kinit -k -t "$KRB_DIR/client.keytab" \
      -c "FILE:$KRB_DIR/client.ccache" "client@$REALM" >"$KRB_DIR/kinit.log" 2>&1 && break
    (( try < 5 )) || { cat "$KRB_DIR/kinit.log" >&2; kdc_stop; die "kinit against the new KDC failed"; }
    sleep 1
  done
  say "Kerberos: KDC running (pid $(kdc_pid)), keytabs in $KRB_DIR"
}

kdc_stop() {
  local pid i
  pid=$(kdc_pid) || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for (( i = 0; i < 40; i++ )); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
}

kerberos_site_properties() {
  cat <<EOF
  <!-- security: Kerberos (scripts/hbase-local, HBASE_LOCAL_SECURITY=kerberos) -->
  <property><name>hbase.security.authentication</name><value>kerberos</value></property>
  <property><name>hadoop.security.authentication</name><value>kerberos</value></property>
  <property><name>hbase.security.authorization</name><value>false</value></property>
  <property><name>hbase.rpc.protection</name><value>$RPC_PROTECTION</value></property>
  <property><name>hbase.master.kerberos.principal</name><value>hbase/_HOST@$REALM</value></property>
  <property><name>hbase.master.keytab.file</name><value>$KRB_DIR/hbase.keytab</value></property>
  <property><name>hbase.regionserver.kerberos.principal</name><value>hbase/_HOST@$REALM</value></property>
  <property><name>hbase.regionserver.keytab.file</name><value>$KRB_DIR/hbase.keytab</value></property>
  <!-- advertised as localhost, the host part of the servers' principal (see SERVER_HOST) -->
  <property><name>hbase.master.hostname</name><value>$SERVER_HOST</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>$SERVER_HOST</value></property>
EOF
}

kerberos_client_properties() {
  cat <<EOF
  <property><name>hbase.security.authentication</name><value>kerberos</value></property>
  <property><name>hbase.rpc.protection</name><value>$RPC_PROTECTION</value></property>
  <property><name>hbase.master.kerberos.principal</name><value>hbase/_HOST@$REALM</value></property>
  <property><name>hbase.regionserver.kerberos.principal</name><value>hbase/_HOST@$REALM</value></property>
EOF
}

kerberos_jvm_flags() {
  printf '%s\n' \
    "-Djava.security.krb5.conf=$KRB_DIR/krb5.conf" \
    "-Djava.security.auth.login.config=$KRB_DIR/jaas.conf" \
    -Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
}

kerberos_env() {
  cat <<EOF
KRB5_CONFIG=$KRB_DIR/krb5.conf
REALM=$REALM
KDC=127.0.0.1:$KDC_PORT
RPC_PROTECTION=$RPC_PROTECTION
SERVER_PRINCIPAL=hbase/_HOST@$REALM
CLIENT_PRINCIPAL=client@$REALM
CLIENT_KEYTAB=$KRB_DIR/client.keytab
CLIENT_CCACHE=FILE:$KRB_DIR/client.ccache
SHORT_PRINCIPAL=short@$REALM
SHORT_KEYTAB=$KRB_DIR/short.keytab
SHORT_TICKET_LIFETIME=$SHORT_TICKET_LIFETIME
STALE_PRINCIPAL=stale@$REALM
STALE_KEYTAB=$KRB_DIR/stale.keytab
GHOST_PRINCIPAL=ghost@$REALM
GHOST_KEYTAB=$KRB_DIR/ghost.keytab
EOF
}

# ---------------------------------------------------------------------------------------------
# TLS: certificates from openssl

# $1 name, $2 CA name, $3 subject CN, $4 extensions (openssl x509 -extfile lines)
tls_issue() {
  local name=$1 ca=$2 cn=$3 ext=$4
  openssl req -new -newkey rsa:2048 -nodes -keyout "$TLS_DIR/$name-key.pem" \
    -out "$TLS_DIR/$name.csr" -subj "/CN=$cn" >>"$TLS_DIR/openssl.log" 2>&1 \
    || die "openssl: key and request for $name failed (see $TLS_DIR/openssl.log)"
  printf '%s\n' "$ext" >"$TLS_DIR/$name.ext"
  openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$TLS_DIR/$ca.pem" -CAkey "$TLS_DIR/$ca-key.pem" \
    -set_serial "0x$(openssl rand -hex 8)" -days 30 -sha256 -extfile "$TLS_DIR/$name.ext" \
    -out "$TLS_DIR/$name.pem" >>"$TLS_DIR/openssl.log" 2>&1 \
    || die "openssl: signing $name failed (see $TLS_DIR/openssl.log)"
  rm -f "$TLS_DIR/$name.csr" "$TLS_DIR/$name.ext"
}

tls_ca() {
  local name=$1 cn=$2
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TLS_DIR/$name-key.pem" -out "$TLS_DIR/$name.pem" \
    -days 30 -sha256 -subj "/CN=$cn" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    >>"$TLS_DIR/openssl.log" 2>&1 || die "openssl: CA $name failed (see $TLS_DIR/openssl.log)"
}

tls_generate() {
  mkdir -p "$TLS_DIR"
  chmod 700 "$TLS_DIR"
  say "TLS: generating a CA and certificates in $TLS_DIR ..."
  local leaf="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
  tls_ca ca "hbase-local test CA"
  tls_ca other-ca "hbase-local unrelated CA"
  # The servers' certificate also serves their own connections to each other (client auth).
  local names="IP:127.0.0.1"
  [[ "$SERVER_HOST" == localhost ]] && names="DNS:localhost,IP:127.0.0.1"
  tls_issue server ca "$SERVER_HOST" "$leaf
subjectAltName=$names
extendedKeyUsage=serverAuth,clientAuth"
  # The server checks a client certificate's name against the peer address (verify.client.hostname).
  tls_issue client ca "hbase-local client" "$leaf
subjectAltName=IP:127.0.0.1
extendedKeyUsage=clientAuth"
  cat "$TLS_DIR/server-key.pem" "$TLS_DIR/server.pem" "$TLS_DIR/ca.pem" >"$TLS_DIR/server-keystore.pem"
}

tls_site_properties() {
  cat <<EOF
  <!-- security: TLS (scripts/hbase-local, HBASE_LOCAL_SECURITY=tls) -->
  <property><name>hbase.server.netty.tls.enabled</name><value>true</value></property>
  <property><name>hbase.server.netty.tls.supportplaintext</name><value>false</value></property>
  <property><name>hbase.server.netty.tls.client.auth.mode</name><value>$TLS_CLIENT_AUTH</value></property>
  <property><name>hbase.client.netty.tls.enabled</name><value>true</value></property>
  <property><name>hbase.rpc.tls.keystore.type</name><value>PEM</value></property>
  <property><name>hbase.rpc.tls.keystore.location</name><value>$TLS_DIR/server-keystore.pem</value></property>
  <property><name>hbase.rpc.tls.truststore.type</name><value>PEM</value></property>
  <property><name>hbase.rpc.tls.truststore.location</name><value>$TLS_DIR/ca.pem</value></property>
EOF
}

tls_client_properties() {
  cat <<EOF
  <property><name>hbase.client.netty.tls.enabled</name><value>true</value></property>
  <property><name>hbase.rpc.tls.truststore.type</name><value>PEM</value></property>
  <property><name>hbase.rpc.tls.truststore.location</name><value>$TLS_DIR/ca.pem</value></property>
  <property><name>hbase.rpc.tls.keystore.type</name><value>PEM</value></property>
  <property><name>hbase.rpc.tls.keystore.location</name><value>$TLS_DIR/client-keystore.pem</value></property>
EOF
}

tls_env() {
  cat <<EOF
CA_PEM=$TLS_DIR/ca.pem
OTHER_CA_PEM=$TLS_DIR/other-ca.pem
CLIENT_CERT_PEM=$TLS_DIR/client.pem
CLIENT_KEY_PEM=$TLS_DIR/client-key.pem
TLS_CLIENT_AUTH=$TLS_CLIENT_AUTH
EOF
}

# ---------------------------------------------------------------------------------------------
# hooks called by scripts/hbase-local

# Extra <property> lines of the servers' hbase-site.xml.
security_site_properties() {
  if sec_has kerberos; then kerberos_site_properties; fi
  if sec_has tls; then tls_site_properties; fi
}

# Extra JVM flags of the HBase JVM and of the stop client.
security_jvm_flags() {
  if sec_has kerberos; then kerberos_jvm_flags; fi
}

# The conf directory the stop client puts first on its classpath.
security_admin_conf_dir() {
  if sec_has kerberos; then printf '%s\n' "$ADMIN_CONF_DIR"; else printf '%s\n' "$CONF_DIR"; fi
}

# Before the JVM starts (the run directory and the servers' config exist): the KDC and its
# principals, or the certificates; then the client's site file and security.env.
security_start() {
  [[ "$SECURITY" != none ]] || return 0
  mkdir -p "$SEC_DIR"
  if sec_has kerberos; then
      kdc_start
      # Hadoop's UserGroupInformation reads core-site.xml, not hbase-site.xml: without this the
      # servers never log in from their keytab (they run as the OS user, auth:SIMPLE).
      cat >"$CONF_DIR/core-site.xml" <<EOF
<?xml version="1.0"?>
<!-- Generated by scripts/hbase-local (HBASE_LOCAL_SECURITY=kerberos). -->
<configuration>
  <property><name>hadoop.security.authentication</name><value>kerberos</value></property>
</configuration>
EOF
  fi
  if sec_has tls; then
    tls_generate
    cat "$TLS_DIR/client-key.pem" "$TLS_DIR/client.pem" >"$TLS_DIR/client-keystore.pem"
  fi
  mkdir -p "$CLIENT_CONF_DIR"
  {
    echo '<?xml version="1.0"?>'
    echo "<!-- Generated by scripts/hbase-local: a client's view of this run ($SECURITY). -->"
    echo '<configuration>'
    echo "  <property><name>hbase.zookeeper.quorum</name><value>$ZK_HOST</value></property>"
    echo "  <property><name>hbase.zookeeper.property.clientPort</name><value>$ZK_PORT</value></property>"
    if sec_has kerberos; then kerberos_client_properties; fi
    if sec_has tls; then tls_client_properties; fi
    echo '</configuration>'
  } >"$CLIENT_CONF_DIR/hbase-site.xml"
  if sec_has kerberos; then
    mkdir -p "$ADMIN_CONF_DIR"
    sed "s#</configuration>#  <property><name>hbase.client.keytab.file</name><value>$KRB_DIR/hbase.keytab</value></property>\n  <property><name>hbase.client.keytab.principal</name><value>hbase/$SERVER_HOST@$REALM</value></property>\n</configuration>#" \
      "$CONF_DIR/hbase-site.xml" >"$ADMIN_CONF_DIR/hbase-site.xml"
    cp "$CONF_DIR/core-site.xml" "$ADMIN_CONF_DIR/"
  fi
  {
    echo "# Generated by scripts/hbase-local: what a client of this run needs."
    echo "SECURITY=$SECURITY"
    echo "ZK=$ZK_HOST:$ZK_PORT"
    echo "CLIENT_CONF_DIR=$CLIENT_CONF_DIR"
    if sec_has kerberos; then kerberos_env; fi
    if sec_has tls; then tls_env; fi
  } >"$SEC_ENV_FILE"
  cat >>"$ENV_FILE" <<EOF
SECURITY=$SECURITY
KDC_PORT=$KDC_PORT
REALM=$REALM
EOF
}

# After the HBase JVM is gone (or failed to start).
security_stop() {
  if sec_has kerberos; then kdc_stop; fi
  return 0
}

security_status() {
  [[ "$SECURITY" != none ]] || return 0
  echo "  security:         $SECURITY (client settings: $SEC_ENV_FILE, site: $CLIENT_CONF_DIR)"
  if sec_has kerberos; then
    if kdc_pid >/dev/null; then echo "  KDC:              127.0.0.1:$KDC_PORT realm $REALM (pid $(kdc_pid))"
    else echo "  KDC:              not running"; fi
  fi
}
