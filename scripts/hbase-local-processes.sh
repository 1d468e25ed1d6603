# shellcheck shell=bash
# scripts/hbase-local-processes.sh: the multi-process mode of scripts/hbase-local (sourced by it;
# not run on its own). `scripts/hbase-local start --processes` runs a real distributed-mode
# cluster on 127.0.0.1, one JVM per daemon, so that single daemons can be killed (kill -9) and
# restarted:
#
#   zk        ZooKeeper (ZooKeeperServerMain)           port HBASE_LOCAL_ZK_PORT
#   master1   the active master                         port HBASE_LOCAL_MASTER_PORT (P)
#   master2   a backup master                           port P+1
#   rs1..rsN  region servers (N = HBASE_LOCAL_REGIONSERVERS, 1..9, default 3)   port P+10+n
#
# All of them share one root directory on the local filesystem (run/hbase). The data survives
# kill -9 of any daemon: the WAL is written through Hadoop's RawLocalFileSystem, whose hflush
# hands every acknowledged edit to the kernel before the client is answered (see the README's
# "Crash testing" section for why the default LocalFileSystem would not). A new
# `start --processes` begins with an empty cluster, as the default mode does.
#
# Commands (besides start/stop/status/zk/logs, which know the mode of the running cluster):
#   kill-rs N          kill -9 region server N
#   start-rs N [--zk HOST:PORT] [--socks HOST:PORT]
#                      start region server N again (same port, new start code) and wait until it
#                      is registered in ZooKeeper. --zk: its ZooKeeper connection goes to
#                      HOST:PORT instead (a relay); --socks: its outgoing RPCs (to the master and
#                      other region servers) go through a SOCKS proxy at HOST:PORT. Both let a
#                      test cut the server off the network while it keeps running.
#   stop-rs N          stop region server N cleanly (SIGTERM: it closes its regions)
#   kill-meta          kill -9 the region server hosting hbase:meta (prints which)
#   kill-master [N]    kill -9 master N, or the active one (prints which)
#   start-master [N]   start master N (or every master that is down) as a backup master
#   kill-zk            kill -9 ZooKeeper (its data directory stays: sessions resume on restart)
#   stop-zk            stop ZooKeeper cleanly (SIGTERM)
#   start-zk           start ZooKeeper again and wait until it answers
#   restart-zk         kill-zk, then start-zk
#   pid ROLE           print the pid of ROLE (zk, master1, master2, rs1, ...); exit 3 if down
#
# Memory: ZooKeeper 128 MB heap, each master 320 MB, each region server 768 MB
# (HBASE_LOCAL_ZK_HEAP, HBASE_LOCAL_MASTER_HEAP, HBASE_LOCAL_RS_HEAP): 3.1 GB of heap for the
# default 6 JVMs, about 4 GB resident.

PROCS_ZK_HEAP=${HBASE_LOCAL_ZK_HEAP:-128m}
PROCS_MASTER_HEAP=${HBASE_LOCAL_MASTER_HEAP:-320m}
PROCS_RS_HEAP=${HBASE_LOCAL_RS_HEAP:-768m}
# ZooKeeper session of the HBase daemons: how soon a killed region server or master is noticed.
PROCS_ZK_SESSION_MS=${HBASE_LOCAL_ZK_SESSION_TIMEOUT:-10000}
PROCS_PID_DIR="$RUN_DIR/pids"
PROCS_MARKER="$RUN_DIR/processes"

procs_mode_running() { [[ -f "$PROCS_MARKER" ]]; }

procs_master_port() { echo $(( MASTER_PORT + $1 - 1 )); }
procs_rs_port() { echo $(( MASTER_PORT + 10 + $1 )); }

procs_roles() {
  local n
  printf "%s\n" zk master1 master2
  for (( n = 1; n <= NUM_RS; n++ )); do echo "rs$n"; done
}

# Pid of ROLE if its JVM is alive (checked against its command line, so a recycled pid is not
# mistaken for it).
procs_pid() {
  local role=$1 pid
  [[ -f "$PROCS_PID_DIR/$role.pid" ]] || return 1
  pid=$(<"$PROCS_PID_DIR/$role.pid")
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null \
    | grep -q -- "-Dhbase.local.role=$role -Dhbase.local.run.dir=$RUN_DIR " || return 1
  printf '%s\n' "$pid"
}

procs_any_running() {
  local role
  for role in $(procs_roles); do
    procs_pid "$role" >/dev/null && return 0
  done
  return 1
}

procs_check_role() {
  local role=$1
  procs_roles | grep -qx "$role" || die "unknown role '$role' (roles: $(procs_roles | paste -sd' '))"
}

procs_check_rs() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] && (( $1 >= 1 && $1 <= NUM_RS )) \
    || die "region server number must be 1..$NUM_RS (got '${1:-}')"
}

# "true" when the fetched Hadoop's local streams advertise hflush/hsync (their buffer is a
# BufferedIOStatisticsOutputStream: Hadoop 3.3.1 and later, as HBase 2.5/2.6-hadoop3 bring),
# else "false" (Hadoop 2.10 of HBase 2.4, Hadoop 3.2 of HBase 3.0.0-alpha-4: the same flush to
# the file descriptor, undeclared).
procs_capability_check() {
  local jar v
  jar=$(ls "$LIB_DIR"/hadoop-common-[0-9]*.jar 2>/dev/null | head -n 1)
  if [[ -n "$jar" ]] && command -v python3 >/dev/null 2>&1; then
    python3 - "$jar" <<'PY' && return 0
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print("true" if "org/apache/hadoop/fs/statistics/BufferedIOStatisticsOutputStream.class" in names else "false")
PY
  fi
  v=$(basename "${jar:-hadoop-common-3.4.0.jar}" .jar); v=${v#hadoop-common-}
  if printf '3.3.1
%s
' "${v%%-*}" | sort -V -C; then echo true; else echo false; fi
}

procs_write_config() {
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$RUN_DIR/hbase" "$RUN_DIR/tmp" "$RUN_DIR/zk" "$PROCS_PID_DIR"
  # The standalone mode's files first (logging configs, hosts file, env file); the site is
  # replaced below.
  write_config
  # One log file per daemon: its JVM names it with -Dhbase.local.log (both logging stacks
  # substitute system properties in their configuration).
  if [[ "$(logging_backend)" == log4j1 ]]; then
    sed -i 's|^log4j.appender.FILE.File=.*|log4j.appender.FILE.File=${hbase.local.log}|' \
      "$CONF_DIR/log4j.properties"
  else
    sed -i 's|^appender.file.fileName = .*|appender.file.fileName = ${sys:hbase.local.log}|;
            s|^appender.file.filePattern = .*|appender.file.filePattern = ${sys:hbase.local.log}.%i|' \
      "$CONF_DIR/log4j2.properties"
  fi

  cat >"$CONF_DIR/hbase-site.xml" <<EOF
<?xml version="1.0"?>
<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>
<!-- Generated by scripts/hbase-local (multi-process mode); rewritten on every start. -->
<configuration>
  <!-- distributed: every daemon in its own JVM, ZooKeeper apart, one root on the local disk -->
  <property><name>hbase.cluster.distributed</name><value>true</value></property>
  <property><name>hbase.rootdir</name><value>file://$RUN_DIR/hbase</value></property>
  <property><name>hbase.tmp.dir</name><value>$RUN_DIR/tmp</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>$ZK_HOST</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$ZK_PORT</value></property>
  <property><name>zookeeper.session.timeout</name><value>$PROCS_ZK_SESSION_MS</value></property>

  <!-- Durability on the local filesystem (README, "Crash tests"): an acknowledged edit must be
       in the kernel when the client hears of it, so that kill -9 cannot take it. The raw local
       filesystem's hflush writes it to the file descriptor (hsync also fsyncs), and no
       checksum layer buffers in between. On Hadoop 3 its streams advertise hflush and hsync,
       and HBase checks that they do; Hadoop 2's (HBase 2.4) flush the same way but do not
       say so, and the check would refuse them. -->
  <property><name>fs.file.impl</name><value>org.apache.hadoop.fs.RawLocalFileSystem</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>$(procs_capability_check)</value></property>

  <!-- addresses: loopback only, fixed ports, no web UIs -->
  <property><name>hbase.master.hostname</name><value>$ADVERTISED_HOST</value></property>
  <property><name>hbase.unsafe.regionserver.hostname</name><value>$ADVERTISED_HOST</value></property>
  <property><name>hbase.master.port</name><value>$(procs_master_port 1)</value></property>
  <property><name>hbase.regionserver.port</name><value>$(procs_rs_port 1)</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>

  <!-- a master that takes over with region servers down must not wait for them -->
  <property><name>hbase.master.wait.on.regionservers.mintostart</name><value>1</value></property>
  <property><name>hbase.regionserver.msginterval</name><value>1000</value></property>
  <property><name>hbase.hfile.compaction.discharger.interval</name><value>5000</value></property>
  <!-- the balancer never runs on its own, so test-driven region moves stay put -->
  <property><name>hbase.balancer.period</name><value>2147483647</value></property>

  <!-- 2 cores for 6 JVMs: modest thread pools -->
  <property><name>hbase.regionserver.handler.count</name><value>10</value></property>
  <property><name>hbase.master.handler.count</name><value>10</value></property>
  <property><name>hbase.regionserver.metahandler.count</name><value>5</value></property>

  <!-- memory: one region server per JVM ($PROCS_RS_HEAP heap) -->
  <property><name>hbase.regionserver.global.memstore.size</name><value>0.3</value></property>
  <property><name>hfile.block.cache.size</name><value>0.2</value></property>
$(extra_site_properties)
</configuration>
EOF

  cat >"$CONF_DIR/zoo.cfg" <<EOF
# Generated by scripts/hbase-local start --processes
tickTime=1000
minSessionTimeout=2000
maxSessionTimeout=30000
dataDir=$RUN_DIR/zk
clientPort=$ZK_PORT
clientPortAddress=$ZK_HOST
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
# The transaction log is written (to the kernel) before every answer, which is what survives
# kill -9; an fsync per write would only add disk latency on a shared test machine.
forceSync=no
EOF

  cat >>"$ENV_FILE" <<EOF
MODE=processes
MASTER_PORT=$MASTER_PORT
PROCS_ZK_HEAP=$PROCS_ZK_HEAP
PROCS_MASTER_HEAP=$PROCS_MASTER_HEAP
PROCS_RS_HEAP=$PROCS_RS_HEAP
PROCS_ZK_SESSION_MS=$PROCS_ZK_SESSION_MS
EOF
  touch "$PROCS_MARKER"
}

# Launches ROLE's JVM in its own session; extra JVM flags in PROCS_JVM_EXTRA (array).
procs_launch() {
  local role=$1 heap=$2 main=$3
  shift 3
  local java; java=$(java_bin)
  mkdir -p "$RUN_DIR/tmp/$role"
  local jvm=("-Dhbase.local.role=$role" "-Dhbase.local.run.dir=$RUN_DIR"
             "-Xms$heap" "-Xmx$heap" -XX:+UseSerialGC -XX:+ExitOnOutOfMemoryError
             # HBase's classes outgrow the default 21 MB metaspace threshold: without this, full
             # GCs during start (1 s and 5.2 s measured in one region server on a loaded machine)
             -XX:MetaspaceSize=160m
             "-Xlog:gc:file=$LOG_DIR/gc-$role.log:time,uptime:filecount=2,filesize=10m"
             "-Djava.io.tmpdir=$RUN_DIR/tmp/$role"
             "$(log_config_flag server)"
             "-Dhbase.local.log=$LOG_DIR/$role.log"
             "-Dzookeeper.jmx.log4j.disable=true")
  mapfile -t -O "${#jvm[@]}" jvm < <(jdk_module_flags; resolver_flags)
  jvm+=("${PROCS_JVM_EXTRA[@]}")
  rm -f "$PROCS_PID_DIR/$role.pid"
  (
    exec 9>&-   # do not hand the hbase-local lock to the JVM
    cd "$RUN_DIR"
    # shellcheck disable=SC2016  # $$ and $@ belong to the inner shell
    exec setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PROCS_PID_DIR/$role.pid" \
      "$java" "${jvm[@]}" -cp "$(classpath)" "$main" "$@" \
      >>"$LOG_DIR/$role.out" 2>&1 </dev/null
  ) &
  local launcher=$!
  disown 2>/dev/null || true
  # The launcher (setsid, nohup, bash: one pid, which becomes the JVM's) writes the pid file
  # first thing. Wait for it while the launcher lives, as long as a start may take: a fixed
  # 2 s leaves little room for four exec's on a 2-core machine at load 20, and once run out
  # it reported "did not start" of a daemon that was still starting.
  local deadline=$(( $(date +%s) + START_TIMEOUT ))
  while [[ ! -s "$PROCS_PID_DIR/$role.pid" ]]; do
    kill -0 "$launcher" 2>/dev/null || [[ -s "$PROCS_PID_DIR/$role.pid" ]] \
      || die "$role did not start (see $LOG_DIR/$role.out)"
    (( $(date +%s) < deadline )) || die "$role did not write its pid file within ${START_TIMEOUT}s (see $LOG_DIR/$role.out)"
    sleep 0.05
  done
}

procs_start_zk() {
  PROCS_JVM_EXTRA=()
  procs_launch zk "$PROCS_ZK_HEAP" org.apache.zookeeper.server.ZooKeeperServerMain "$CONF_DIR/zoo.cfg"
  # As long as any start may take: a ZooKeeper JVM on a loaded machine can need over a minute.
  procs_wait "ZooKeeper answers" "$START_TIMEOUT" procs_zk_up
}

procs_start_master() {
  local n=$1 backup=$2
  local args=("-Dhbase.master.port=$(procs_master_port "$n")")
  [[ "$backup" == 1 ]] && args+=(--backup)
  PROCS_JVM_EXTRA=()
  procs_launch "master$n" "$PROCS_MASTER_HEAP" org.apache.hadoop.hbase.master.HMaster "${args[@]}" start
}

# Region server N; $2/$3: ZooKeeper relay and SOCKS proxy (both optional).
procs_start_rs() {
  local n=$1 zk=${2:-} socks=${3:-}
  local args=("-Dhbase.regionserver.port=$(procs_rs_port "$n")")
  if [[ -n "$zk" ]]; then
    args+=("-Dhbase.zookeeper.quorum=${zk%:*}" "-Dhbase.zookeeper.property.clientPort=${zk##*:}")
  fi
  if [[ -n "$socks" ]]; then
    # Hadoop's SOCKS socket factory is honoured by HBase's blocking RPC client (the default,
    # netty-based one opens its sockets itself).
    args+=("-Dhbase.rpc.client.impl=org.apache.hadoop.hbase.ipc.BlockingRpcClient"
           "-Dhadoop.rpc.socket.factory.class.default=org.apache.hadoop.net.SocksSocketFactory"
           "-Dhadoop.socks.server=$socks")
  fi
  PROCS_JVM_EXTRA=()
  procs_launch "rs$n" "$PROCS_RS_HEAP" org.apache.hadoop.hbase.regionserver.HRegionServer "${args[@]}" start
}

# zk_query, tried up to 5 times a second apart: one missed answer under load must not fail a
# command that acts on the answer.
procs_zk_query_patiently() {
  local i out
  for (( i = 0; i < 5; i++ )); do
    # captured first: a query that fails midway has printed part of its answer
    if out=$(zk_query "$ZK_PORT" 2>/dev/null); then printf '%s\n' "$out"; return 0; fi
    sleep 1
  done
  return 1
}

procs_zk_answers() { zk_query "$ZK_PORT" >/dev/null 2>&1 || return 1; }
procs_zk_up() { procs_assert_alive zk || return 2; procs_zk_answers; }

# "rs<n>" or "master<n>" for a server name host,port,startcode.
procs_role_of() {
  local port n
  port=$(cut -d, -f2 <<<"$1")
  for (( n = 1; n <= NUM_RS; n++ )); do
    [[ "$port" == "$(procs_rs_port "$n")" ]] && { echo "rs$n"; return 0; }
  done
  for n in 1 2; do
    [[ "$port" == "$(procs_master_port "$n")" ]] && { echo "master$n"; return 0; }
  done
  echo "?"
}

# Waits until `$3...` succeeds (exit 0), at most $2 seconds; $1 says what for. The check
# exits 1 for "not yet" and 2 or more for "never" (a daemon died), which ends the wait at once.
procs_wait() {
  local what=$1 secs=$2 rc
  shift 2
  local deadline=$(( $(date +%s) + secs ))
  while :; do
    rc=0; "$@" || rc=$?
    (( rc == 0 )) && return 0
    (( rc >= 2 )) && { err "gave up waiting for: $what"; return 1; }
    if (( $(date +%s) >= deadline )); then
      err "timed out after ${secs}s waiting for: $what"
      return 1
    fi
    sleep 0.5
  done
}

# Returns 2, printing ROLE's log tail, if its JVM is gone.
procs_assert_alive() {
  local role=$1
  procs_pid "$role" >/dev/null && return 0
  err "$role exited (log: $LOG_DIR/$role.log)"
  tail -n 60 "$LOG_DIR/$role.log" >&2 2>/dev/null || true
  tail -n 20 "$LOG_DIR/$role.out" >&2 2>/dev/null || true
  return 2
}

procs_cluster_ready() {
  local out rs
  for role in master1 $(procs_roles | grep '^rs'); do
    procs_assert_alive "$role" || return 2
  done
  grep -q "$READY_LINE" "$LOG_DIR/master1.log" 2>/dev/null || return 1
  out=$(zk_query "$ZK_PORT" 2>/dev/null) || return 1
  rs=$(grep -c '^rs ' <<<"$out" || true)
  (( rs >= NUM_RS )) && grep -q '^meta ' <<<"$out"
}

cmd_procs_start() {
  lock
  if running_pid >/dev/null || procs_any_running; then
    die "a cluster of $BASE_DIR is already running: stop it first (scripts/hbase-local stop)"
  fi
  if [[ -e "$RUN_DIR" ]]; then
    say "removing the stale run directory $RUN_DIR (no HBase process alive)"
    rm -rf "$RUN_DIR"
  fi
  [[ "$ZK_PORT" =~ ^[0-9]+$ && "$ZK_PORT" -gt 0 ]] || die "HBASE_LOCAL_ZK_PORT must be a port number > 0 (got '$ZK_PORT')"
  [[ "$MASTER_PORT" =~ ^[0-9]+$ && "$MASTER_PORT" -gt 0 ]] \
    || die "HBASE_LOCAL_MASTER_PORT must be a fixed port with --processes (got '$MASTER_PORT')"
  [[ "$NUM_RS" =~ ^[0-9]+$ ]] && (( NUM_RS >= 1 && NUM_RS <= 9 )) \
    || die "HBASE_LOCAL_REGIONSERVERS must be 1..9 with --processes (got '$NUM_RS')"
  local port n
  for port in "$ZK_PORT" "$(procs_master_port 1)" "$(procs_master_port 2)" \
              $(for (( n = 1; n <= NUM_RS; n++ )); do procs_rs_port "$n"; done); do
    # A daemon of another cluster on these ports may still be exiting (killed, its sockets not
    # yet closed): give it PORT_FREE_TIMEOUT seconds before calling the port taken.
    wait_port_free "$port" "$PORT_FREE_TIMEOUT" \
      || die "port $port is already in use; move the cluster with HBASE_LOCAL_ZK_PORT / HBASE_LOCAL_MASTER_PORT"
  done
  local java; java=$(java_bin); check_java_version "$java"
  check_hbase_version
  [[ "$ADVERTISED_HOST" =~ ^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$ ]] \
    || die "HBASE_LOCAL_HOSTNAME must be a host name or IPv4 address (got '$ADVERTISED_HOST')"
  extra_site_properties >/dev/null
  fetch_jars
  procs_write_config

  say "starting a multi-process cluster: ZooKeeper $ZK_HOST:$ZK_PORT, masters $(procs_master_port 1) (active) and $(procs_master_port 2) (backup), $NUM_RS region servers on $(procs_rs_port 1)..$(procs_rs_port "$NUM_RS"); heaps zk $PROCS_ZK_HEAP, master $PROCS_MASTER_HEAP, region server $PROCS_RS_HEAP"
  local t0; t0=$(date +%s.%N)
  procs_start_zk || { procs_kill_all; exit 1; }
  procs_start_master 1 0
  # The first master must own the master znode before the backup starts.
  procs_wait "master1 registered in ZooKeeper" "$START_TIMEOUT" procs_master_registered 1 \
    || { procs_kill_all; exit 1; }
  procs_start_master 2 1
  for (( n = 1; n <= NUM_RS; n++ )); do procs_start_rs "$n"; done
  local restarts=0 role dead
  until procs_wait "master initialized, $NUM_RS region servers, meta assigned" "$START_TIMEOUT" procs_cluster_ready; do
    # A region server that aborted while starting (seen: a 5 s GC pause on a loaded machine let
    # its 10 s ZooKeeper session expire) is started again, at most twice in all; a dead master or
    # ZooKeeper, or a start that timed out, still fails the start.
    dead=()
    for role in $(procs_roles | grep '^rs'); do procs_pid "$role" >/dev/null || dead+=("$role"); done
    if (( ${#dead[@]} > 0 && restarts + ${#dead[@]} <= 2 )) \
        && procs_pid zk >/dev/null && procs_pid master1 >/dev/null; then
      for role in "${dead[@]}"; do
        say "starting $role again: it exited during the start (log: $LOG_DIR/$role.log)"
        procs_start_rs "${role#rs}"
        restarts=$(( restarts + 1 ))
      done
      continue
    fi
    tail -n 60 "$LOG_DIR/master1.log" >&2 || true
    err "stopping the half-started cluster; the run directory $RUN_DIR is kept for inspection"
    procs_kill_all
    exit 1
  done
  local secs; secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "HBase ready (processes): zk=$ZK_HOST:$ZK_PORT (startup $secs s, logs $LOG_DIR)"
}

procs_master_registered() {
  procs_assert_alive "master$1" || return 2
  # A failed query is "not yet" (1), whatever its exit code: under load ZooKeeper can miss one
  # answer, and procs_wait reads 2 or more as "never".
  local out
  out=$(zk_query "$ZK_PORT" 2>/dev/null) || return 1
  grep -q "^master [^,]*,$(procs_master_port "$1")," <<<"$out"
}

procs_kill_all() {
  local role pid pids=()
  for role in $(procs_roles); do
    if pid=$(procs_pid "$role"); then
      kill -KILL "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  # Wait on the pids taken before the kill, not on procs_pid again: a killed process's
  # /proc/PID/cmdline reads empty as soon as its memory is released, which comes before its
  # sockets are closed (a JVM of a few GiB: a fraction of a second). procs_pid then no longer
  # knows it while its ports are still bound, and the next start found a port in use.
  for pid in "${pids[@]}"; do
    wait_gone "$pid" "$KILL_TIMEOUT" || say "pid $pid still alive ${KILL_TIMEOUT}s after SIGKILL"
  done
}

cmd_procs_stop() {
  local hard=0
  case "${1:-}" in
    --kill|-k) hard=1 ;;
    "") ;;
    *) die "stop: unknown option '$1' (use --kill)" ;;
  esac
  lock
  load_run_env
  if ! procs_any_running; then
    say "HBase is not running"
    return 0
  fi
  local t0 role pid; t0=$(date +%s.%N)
  if (( hard )); then
    say "killing every daemon with SIGKILL ..."
    procs_kill_all
  else
    local active=0
    for role in master1 master2; do procs_pid "$role" >/dev/null && active=1; done
    if (( active )) && procs_zk_answers; then
      say "stopping HBase: cluster shutdown via the master ..."
      local java; java=$(java_bin)
      local jvm=(-Xmx256m "$(log_config_flag client)")
      mapfile -t -O "${#jvm[@]}" jvm < <(jdk_module_flags; resolver_flags)
      timeout 60 "$java" "${jvm[@]}" -cp "$(classpath)" \
        org.apache.hadoop.hbase.master.HMaster stop --shutDownCluster >>"$LOG_DIR/stop.out" 2>&1 \
        || say "the shutdown request failed (see $LOG_DIR/stop.out); stopping the daemons one by one"
    fi
    # Whatever is still up (a region server with no master to tell it, say): SIGTERM, then KILL.
    for role in $(procs_roles | grep -v '^zk$') zk; do
      if pid=$(procs_pid "$role"); then
        if [[ "$role" == zk ]] || ! wait_gone "$pid" "$STOP_TIMEOUT"; then
          kill_and_wait "$pid" 20
        fi
      fi
    done
  fi
  local secs; secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  say "HBase stopped ($secs s). Logs kept in $LOG_DIR until the next start."
}

cmd_procs_status() {
  load_run_env
  if ! procs_any_running; then
    echo "HBase is not running (processes mode; logs in $LOG_DIR)"
    return 3
  fi
  local out="" zk_ok=0 master="" meta="" role pid port line
  if out=$(zk_query "$ZK_PORT" 2>/dev/null); then zk_ok=1; fi
  master=$(grep '^master ' <<<"$out" | cut -d' ' -f2 || true)
  meta=$(grep '^meta ' <<<"$out" | cut -d' ' -f2 || true)
  echo "HBase is running (processes mode): zk=$ZK_HOST:$ZK_PORT"
  echo "  version:          $(cmd_version)"
  for role in $(procs_roles); do
    case "$role" in
      zk) port=$ZK_PORT ;;
      master*) port=$(procs_master_port "${role#master}") ;;
      rs*) port=$(procs_rs_port "${role#rs}") ;;
    esac
    if pid=$(procs_pid "$role"); then line=$(printf '  %-8s pid %-7s %s:%s' "$role" "$pid" "$ZK_HOST" "$port")
    else line=$(printf '  %-8s %-11s %s:%s' "$role" "down" "$ZK_HOST" "$port"); fi
    case "$role" in
      zk) (( zk_ok )) && line+="  answering" || line+="  not answering" ;;
      master*)
        if [[ "$(cut -d, -f2 <<<"$master")" == "$port" ]]; then line+="  active master"
        elif grep -q "^backup [^,]*,$port," <<<"$out"; then line+="  backup master"; fi ;;
      rs*)
        if grep -q "^rs [^,]*,$port," <<<"$out"; then
          line+="  registered as $(grep "^rs [^,]*,$port," <<<"$out" | cut -d' ' -f2)"
        fi
        [[ "$(cut -d, -f2 <<<"$meta")" == "$port" ]] && line+="  hosts hbase:meta" ;;
    esac
    echo "$line"
  done
  if (( zk_ok )); then
    echo "  master:           ${master:-(none active)}${master:+ ($(procs_role_of "$master"))}"
    echo "  meta on:          ${meta:-(not assigned)}${meta:+ ($(procs_role_of "$meta"))}"
  fi
  echo "  logs:             $LOG_DIR/<role>.log"
  return 0
}

procs_require_running() {
  load_run_env
  procs_mode_running || die "no multi-process cluster in $BASE_DIR (scripts/hbase-local start --processes)"
}

procs_kill_role() {
  local role=$1 pid
  pid=$(procs_pid "$role") || die "$role is not running"
  kill -KILL "$pid"
  wait_gone "$pid" "$KILL_TIMEOUT" || die "$role (pid $pid) survived SIGKILL for ${KILL_TIMEOUT}s"
  say "killed $role (pid $pid) with SIGKILL"
}

cmd_procs_kill_rs() {
  procs_require_running; lock; procs_check_rs "${1:-}"
  procs_kill_role "rs$1"
}

cmd_procs_stop_rs() {
  procs_require_running; lock; procs_check_rs "${1:-}"
  local pid; pid=$(procs_pid "rs$1") || die "rs$1 is not running"
  kill_and_wait "$pid" "$STOP_TIMEOUT"
  say "stopped rs$1 (pid $pid)"
}

cmd_procs_start_rs() {
  procs_require_running; lock
  local n=${1:-} zk="" socks=""
  procs_check_rs "$n"; shift
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --zk) zk=${2:?--zk needs HOST:PORT}; shift 2 ;;
      --socks) socks=${2:?--socks needs HOST:PORT}; shift 2 ;;
      *) die "start-rs: unknown option '$1' (use --zk HOST:PORT, --socks HOST:PORT)" ;;
    esac
  done
  for a in $zk $socks; do
    [[ "$a" =~ ^[0-9A-Za-z.-]+:[0-9]+$ ]] || die "start-rs: '$a' is not HOST:PORT"
  done
  procs_pid "rs$n" >/dev/null && { say "rs$n is already running"; return 0; }
  # The old server's ephemeral znode may still be there (killed less than a session ago): a
  # new start code replaces it once the new server registers.
  procs_start_rs "$n" "$zk" "$socks"
  procs_wait "rs$n registered with a new start code" "$START_TIMEOUT" procs_rs_new_registration "$n" \
    || exit 1
  say "started rs$n (pid $(procs_pid "rs$n")${zk:+, ZooKeeper via $zk}${socks:+, RPCs via SOCKS $socks})"
}

# Region server N is registered by its current JVM: the znode's start code is newer than the
# JVM's start (start codes are the server's start time in ms).
procs_rs_new_registration() {
  local n=$1 port code pid started
  procs_assert_alive "rs$n" || return 2
  port=$(procs_rs_port "$n")
  local out etimes
  out=$(zk_query "$ZK_PORT" 2>/dev/null) || return 1
  code=$(grep "^rs [^,]*,$port," <<<"$out" | cut -d, -f3) || return 1
  [[ "$code" =~ ^[0-9]+$ ]] || return 1
  pid=$(procs_pid "rs$n") || return 1
  # Empty if the JVM died since procs_pid (the next check reports it): an empty operand in
  # the arithmetic below would end the whole script with a syntax error, and no log tail.
  etimes=$(ps -o etimes= -p "$pid" 2>/dev/null | tr -d ' ') || true
  [[ "$etimes" =~ ^[0-9]+$ ]] || return 1
  started=$(( $(date +%s%3N) - etimes * 1000 - 2000 ))
  (( code >= started ))
}

cmd_procs_kill_meta() {
  procs_require_running; lock
  local meta role
  meta=$(procs_zk_query_patiently | grep '^meta ' | cut -d' ' -f2) || true
  [[ -n "$meta" ]] || die "hbase:meta is not assigned (or ZooKeeper does not answer)"
  role=$(procs_role_of "$meta")
  [[ "$role" == rs* ]] || die "hbase:meta is on $meta, which is no region server of this cluster"
  say "hbase:meta is on $meta ($role)"
  procs_kill_role "$role"
}

cmd_procs_kill_master() {
  procs_require_running; lock
  local n=${1:-active} master
  if [[ "$n" == active ]]; then
    master=$(procs_zk_query_patiently | grep '^master ' | cut -d' ' -f2) || true
    [[ -n "$master" ]] || die "no active master registered (or ZooKeeper does not answer)"
    n=$(procs_role_of "$master"); n=${n#master}
    [[ "$n" =~ ^[12]$ ]] || die "the active master $master is not one of this cluster's"
    say "the active master is $master (master$n)"
  fi
  [[ "$n" =~ ^[12]$ ]] || die "master number must be 1 or 2 (got '$n')"
  procs_kill_role "master$n"
}

cmd_procs_start_master() {
  procs_require_running; lock
  local which=${1:-} n started=0
  [[ -z "$which" || "$which" =~ ^[12]$ ]] || die "master number must be 1 or 2 (got '$which')"
  for n in ${which:-1 2}; do
    procs_pid "master$n" >/dev/null && continue
    procs_start_master "$n" 1
    started=1
    procs_wait "master$n registered (active or backup)" "$START_TIMEOUT" procs_master_known "$n" \
      || exit 1
    say "started master$n (pid $(procs_pid "master$n"))"
  done
  (( started )) || say "every master is running"
}

procs_master_known() {
  local n=$1 port out
  procs_assert_alive "master$n" || return 2
  port=$(procs_master_port "$n")
  out=$(zk_query "$ZK_PORT" 2>/dev/null) || return 1
  grep -q "^master [^,]*,$port," <<<"$out" || grep -q "^backup [^,]*,$port," <<<"$out"
}

cmd_procs_kill_zk() {
  procs_require_running; lock
  procs_kill_role zk
}

cmd_procs_stop_zk() {
  procs_require_running; lock
  local pid; pid=$(procs_pid zk) || die "zk is not running"
  kill_and_wait "$pid" 20
  say "stopped zk (pid $pid)"
}

cmd_procs_start_zk() {
  procs_require_running; lock
  if procs_pid zk >/dev/null; then say "ZooKeeper is already running"; return 0; fi
  procs_start_zk || exit 1
  say "started ZooKeeper (pid $(procs_pid zk)) on $ZK_HOST:$ZK_PORT"
}

cmd_procs_pid() {
  procs_require_running
  local role=${1:-}
  procs_check_role "$role"
  procs_pid "$role" || exit 3
}

cmd_procs_logs() {
  load_run_env
  local role
  for role in $(procs_roles); do
    printf '%-8s %s\n' "$role" "$LOG_DIR/$role.log"
  done
  echo "config:  $CONF_DIR"
  case "${1:-}" in
    -f|--follow|tail) exec tail -n 20 -F "$LOG_DIR"/*.log ;;
    "") ;;
    *) die "logs: unknown option '$1' (use -f or tail)" ;;
  esac
}

PROCS_COMMANDS=" kill-rs start-rs stop-rs kill-meta kill-master start-master kill-zk stop-zk start-zk restart-zk pid "

procs_is_command() { [[ "$PROCS_COMMANDS" == *" $1 "* ]]; }

# Runs one of PROCS_COMMANDS.
procs_dispatch() {
  local cmd=$1
  shift
  case "$cmd" in
    kill-rs) cmd_procs_kill_rs "$@" ;;
    start-rs) cmd_procs_start_rs "$@" ;;
    stop-rs) cmd_procs_stop_rs "$@" ;;
    kill-meta) cmd_procs_kill_meta "$@" ;;
    kill-master) cmd_procs_kill_master "$@" ;;
    start-master) cmd_procs_start_master "$@" ;;
    kill-zk) cmd_procs_kill_zk ;;
    stop-zk) cmd_procs_stop_zk ;;
    start-zk) cmd_procs_start_zk ;;
    restart-zk) cmd_procs_kill_zk; cmd_procs_start_zk ;;
    pid) cmd_procs_pid "$@" ;;
  esac
}
