#!/usr/bin/env node
// `make bench`'s last step: merges the figures every benchmark wrote to
// target/bench/*.json (audit.json and permission.json from the Rust benches,
// dashboard.json, notify.json and pss.json from the window benches) into
// target/bench/summary.json, with exactly the keys below (null where a
// bench did not run or did not produce the figure), and prints it. The
// permission round trip is the steady fleet's (every agent started, each
// asking about every 100 ms); the same figure while all 50 agents start at
// once is kept beside it (`..._starting`), not hidden, and so is the steady
// fleet's before its first run finishes (`..._before_first_finish`: the
// round trips of a fleet at work, without the moment every run commits and
// exits at once). The idle PSS is the app as a user starts it; WebKit's
// own floor (MiniBrowser on a one-line page, measured in the same run) is
// kept beside it. The capacity figures (capacity.json) are one engine's with
// `capacity_runs` runs at once (1,000 in `make bench`), each waiting on a
// gate, then decided: per-run RSS and CPU, decision commit, event to a
// socket client, and the fleet's reload. `audit verify` of a million records
// (batched signatures on every core) is kept beside the one-by-one baseline
// of the same run, each with the CPU seconds it used (on a shared machine,
// CPU over cores is the wall time it would take with the cores to itself).
// The web figures (web.json, tests/e2e/web/web.bench.mjs, a real Chromium
// against `overseer serve --web`): a tool call's decision from a tap on the
// phone page's Yes to the demo agent holding its answer, beside the same
// decided by a socket client in the same run (the desktop path) and their
// ratio; the phone inbox's first paint and first card painted with the CPU
// throttled 4x (and the card unthrottled, with the ratio); the engine's
// RSS and PSS per connected browser (one WebSocket each). The host figures
// (hosts.json, crates/overseer-cli/tests/host_bench.rs; hosts-window.json,
// the window's host bench): a decision's round trip to an agent on a host
// over ssh, direct and through 50 ms of added delay, beside a bare
// `ssh host true` on each path; the window's reload and change-to-row with
// a host against the same on this machine. The hostile-load figures
// (hostile_load.json): the engine's `runs list` p99 while runs fork and
// spin, with the run's limits and without.
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dir = join(root, "target", "bench");

export const KEYS = [
  "permission_round_trip_p99_ms_50_agents",
  "permission_round_trip_p99_ms_50_agents_starting",
  "permission_round_trip_p99_ms_50_agents_before_first_finish",
  "blocking_ask_to_notify_p99_ms",
  "blocking_ask_to_row_painted_p99_ms",
  "dashboard_10k_reload_painted_p50_ms",
  "cold_start_to_rows_painted_p50_ms",
  "idle_pss_mb",
  "idle_pss_mb_webkit_floor",
  "audit_append_ratio_vs_bare",
  "gate_decision_commit_p99_ms",
  "capacity_runs",
  "capacity_runs_waiting",
  "capacity_engine_rss_kib_per_run",
  "capacity_agent_rss_kib_per_run",
  "capacity_engine_start_cpu_ms_per_run",
  "capacity_engine_idle_cpu_pct",
  "capacity_engine_finish_cpu_ms_per_run",
  "capacity_decision_commit_p99_ms",
  "capacity_decision_commit_p99_ms_crowded",
  "capacity_event_to_socket_p50_ms",
  "capacity_event_to_socket_p99_ms",
  "capacity_event_to_socket_starting_p99_ms",
  "capacity_reload_runs_p50_ms",
  "capacity_reload_runs_p99_ms",
  "capacity_reload_head_p50_ms",
  "capacity_reload_head_p99_ms",
  "audit_verify_records_per_s",
  "audit_verify_one_by_one_records_per_s",
  "audit_verify_s",
  "audit_verify_cpu_s",
  "audit_verify_one_by_one_cpu_s",
  "web_decision_round_trip_p50_ms",
  "web_decision_round_trip_p99_ms",
  "web_decision_round_trip_socket_p50_ms",
  "web_decision_round_trip_socket_p99_ms",
  "web_decision_round_trip_ratio_p50",
  "web_decision_round_trip_ratio_p99",
  "web_phone_first_paint_p50_ms_cpu4x",
  "web_phone_first_card_painted_p50_ms_cpu4x",
  "web_phone_first_card_painted_p50_ms",
  "web_phone_first_card_painted_ratio_cpu4x",
  "web_engine_rss_kib_per_socket",
  "web_engine_pss_kib_per_socket",
  "host_decision_round_trip_p50_ms_direct",
  "host_decision_round_trip_p99_ms_direct",
  "host_decision_round_trip_p50_ms_plus_50ms",
  "host_decision_round_trip_p99_ms_plus_50ms",
  "host_bare_ssh_p50_ms_direct",
  "host_bare_ssh_p50_ms_plus_50ms",
  "hosts_reload_all_counted_p50_ms",
  "local_reload_all_counted_p50_ms",
  "hosts_change_to_row_p50_ms",
  "local_change_to_row_p50_ms",
  "hosts_cli_alone_p50_ms",
  "hostile_load_runs_p99_ms_idle",
  "hostile_load_runs_p99_ms_storm_unlimited",
  "hostile_load_runs_p99_ms_storm_limited",
  "hostile_load_runs_p99_ms_busy_unlimited",
  "hostile_load_runs_p99_ms_busy_limited",
];

/** The summary from every bench's figures: each key from the file that
 * has it (the audit ratio is the one-record-per-append batch). */
export function summarize(figures) {
  const all = Object.assign({}, ...figures);
  if (all.audit_append_ratio_vs_bare === undefined) all.audit_append_ratio_vs_bare = all.audit_append_ratio_vs_bare_batch_1;
  const out = {};
  for (const k of KEYS) {
    const v = all[k];
    out[k] = typeof v === "number" && Number.isFinite(v) ? Math.round(v * 1000) / 1000 : null;
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".json") && f !== "summary.json") : [];
  const figures = [];
  for (const f of files.sort()) {
    try {
      figures.push(JSON.parse(readFileSync(join(dir, f), "utf8")));
    } catch (e) {
      console.error(`bench summary: ${f} is not JSON (${e.message}); skipped`);
    }
  }
  const summary = summarize(figures);
  writeFileSync(join(dir, "summary.json"), JSON.stringify(summary, null, 2) + "\n");
  console.log(`target/bench/summary.json (from ${files.join(", ") || "no figures"}):`);
  console.log(JSON.stringify(summary, null, 2));
  const missing = KEYS.filter((k) => summary[k] === null);
  if (missing.length) console.log(`missing: ${missing.join(", ")}`);
}
