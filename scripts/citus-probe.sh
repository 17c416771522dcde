#!/usr/bin/env bash
# How far ethos gets on the Citus cluster of `make citus` (issue 40; findings in
# runbooks/citus-probe.md). Re-run it as the schema changes:
#
#   scripts/citus-probe.sh            # ETHOS=.venv/bin/ethos by default
#   PROBE_WITH_ROWS=1 scripts/citus-probe.sh   # a memory stored before distributing
#
# 1. `ethos migrate` into a fresh database of the cluster (tables stay local to the
#    coordinator), then `ethos add`;
# 2. in that database, the memory tables distributed by agent_id, colocated, and the
#    policy and settings tables made reference tables, each error printed; a primary key
#    without agent_id is widened to (agent_id, ...) and the table tried again;
# 3. the write path in plain SQL on the distributed tables (the triggers run on the
#    shards), then `ethos add` and `ethos sweep` against them.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ETHOS="${ETHOS:-$REPO/.venv/bin/ethos}"
DB="${PROBE_DB:-ethos_probe}"
CITUS="$REPO/scripts/citus.sh"
PORT="${CITUS_PORT:-9700}"
[ -x "$ETHOS" ] || { echo "no $ETHOS (make install, or ETHOS=...)" >&2; exit 2; }

"$CITUS" dropdb "$DB" >/dev/null 2>&1
URL="$("$CITUS" db "$DB")" || exit 1
export ETHOS_DATABASE__URL="$URL"

say() { printf '\n### %s\n' "$*"; }
# q SQL: one statement with triggers allowed on distributed tables; "ok" or the error
q() {
    local out
    if out="$(psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=default -h 127.0.0.1 -p "$PORT" \
        -U postgres -d "$DB" -c "SET citus.enable_unsafe_triggers = on" -c "$1" 2>&1)"; then
        echo "ok${out:+: $(echo "$out" | head -n 3 | tr '\n' ' ')}"
        return 0
    fi
    echo "$out" | grep -E '^(ERROR|DETAIL|HINT|CONTEXT|while)' | head -n 6
    return 1
}
val() {
    psql -X -q -A -t -h 127.0.0.1 -p "$PORT" -U postgres -d "$DB" -c "$1"
}
ethos() {
    echo "\$ ethos $*"
    timeout 120 "$ETHOS" "$@" 2>&1 | grep -v '"level": "info"' | tail -n 3 | cut -c1-400
}

say "ethos migrate on the coordinator ($URL)"
ethos migrate
ethos add episode --agent ada --content "Ada likes green tea"

if [ "$(val "SELECT current_setting('server_version_num')::int < 180000")" = t ]; then
    say "stand-in: ethos_content_key without casefold() and pg_unicode_fast (PostgreSQL 18), to see past it"
    q "CREATE OR REPLACE FUNCTION ethos_content_key(content text) RETURNS uuid
       LANGUAGE sql IMMUTABLE PARALLEL SAFE
       AS \$\$ SELECT md5(btrim(regexp_replace(lower(normalize(content, NFKC)), '[[:space:]]+', ' ', 'g'), ' '))::uuid \$\$"
fi
if [ -n "${PROBE_WITH_ROWS:-}" ]; then  # distributing tables that hold rows copies them
    ethos add episode --agent ada --content "Ada likes green tea"    # through the triggers
fi

say "reference tables"
for t in decay_policies importance_tiers ethos_settings; do
    echo "$t: $(q "SELECT create_reference_table('$t')")"
done

distribute() {  # distribute TABLE [COLOCATE]
    local t="$1" with="${2:-none}" pk cols
    if [ -z "$(val "SELECT 1 FROM pg_attribute WHERE attrelid = '$t'::regclass AND attname = 'agent_id' AND NOT attisdropped")" ]; then
        echo "$t: no agent_id column (its columns: $(val "SELECT string_agg(attname, ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '$t'::regclass AND attnum > 0 AND NOT attisdropped"))"
        return
    fi
    local stmt="SELECT create_distributed_table('$t', 'agent_id', colocate_with => '$with')"
    if q "$stmt" >/tmp/ethos-probe.$$; then
        echo "$t: distributed"
        return
    fi
    echo "$t:"; sed 's/^/    /' /tmp/ethos-probe.$$
    pk="$(val "SELECT conname FROM pg_constraint WHERE conrelid = '$t'::regclass AND contype = 'p'")"
    cols="$(val "SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n) FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY AS k (attnum, n), pg_attribute a WHERE c.conrelid = '$t'::regclass AND c.contype = 'p' AND a.attrelid = c.conrelid AND a.attnum = k.attnum AND a.attname <> 'agent_id'")"
    if grep -q 'cannot create constraint' /tmp/ethos-probe.$$ && [ -n "$pk" ]; then
        echo "    -> primary key ($cols) widened to (agent_id, $cols):"
        q "ALTER TABLE $t DROP CONSTRAINT $pk" | sed 's/^/       /'
        q "ALTER TABLE $t ADD PRIMARY KEY (agent_id, $cols)" | sed 's/^/       /'
        if q "$stmt" | sed 's/^/       /'; then echo "       $t: distributed"; fi
    fi
    rm -f /tmp/ethos-probe.$$
}

say "memory tables by agent_id, colocated with episodic_traces"
distribute episodic_traces
for t in semantic_facts memory_vectors memory_links memory_revisions agent_policies \
    lexeme_stats agent_text_stats agent_vector_stats retrieval_queue retrieval_dead_letters \
    episodic_traces_due semantic_facts_due memory_vectors_due; do
    [ -n "$(val "SELECT to_regclass('$t')")" ] || { echo "$t: no such table"; continue; }
    distribute "$t" episodic_traces
done
echo "distributed: $(val "SELECT string_agg(logicalrelid::text || '(' || partmethod::text || ')', ' ' ORDER BY logicalrelid::text) FROM pg_dist_partition")"

say "the write path in SQL (triggers run on the shards)"
echo "insert, importance from the words: $(q "INSERT INTO episodic_traces (agent_id, content) VALUES ('ada', 'Ada likes green tea')")"
echo "insert, importance given:          $(q "INSERT INTO episodic_traces (agent_id, content, importance) VALUES ('ada', 'Ada likes green tea', 0.8)")"
echo "insert a fact, importance given:   $(q "INSERT INTO semantic_facts (agent_id, content, importance) VALUES ('ada', 'Ada lives in Lyon', 0.8)")"
echo "update content:                    $(q "UPDATE semantic_facts SET content = 'Ada lives in Paris' WHERE agent_id = 'ada'")"
echo "prune:                             $(q "UPDATE semantic_facts SET pruned = true, pruned_at = now(), prune_reason = 'manual' WHERE agent_id = 'ada'")"
echo "hard delete:                       $(q "DELETE FROM semantic_facts WHERE agent_id = 'ada'")"

say "the same without the AFTER INSERT statement triggers (hints, statistics): dropped"
for t in episodic_traces semantic_facts memory_vectors; do
    for trig in $(val "SELECT tgname FROM pg_trigger WHERE tgrelid = '$t'::regclass AND NOT tgisinternal AND tgtype & 1 = 0 AND tgtype & 4 = 4"); do
        echo "drop $trig: $(q "DROP TRIGGER $trig ON $t")"
    done
done
echo "insert, importance from the words: $(q "INSERT INTO episodic_traces (agent_id, content) VALUES ('ada', 'Ada likes green tea')")"
echo "insert, importance given:          $(q "INSERT INTO episodic_traces (agent_id, content, importance) VALUES ('ada', 'Ada likes green tea', 0.8)")"
echo "insert a fact, importance given:   $(q "INSERT INTO semantic_facts (agent_id, content, importance) VALUES ('ada', 'Ada lives in Lyon', 0.8)")"
echo "rows: $(val "SELECT count(*) FROM semantic_facts")"
echo "update content:                    $(q "UPDATE semantic_facts SET content = 'Ada lives in Paris' WHERE agent_id = 'ada'")"
echo "prune:                             $(q "UPDATE semantic_facts SET pruned = true, pruned_at = now(), prune_reason = 'manual' WHERE agent_id = 'ada'")"
echo "hard delete:                       $(q "DELETE FROM semantic_facts WHERE agent_id = 'ada'")"

say "ethos on the distributed tables"
ethos add episode --agent ada --content "Ada likes green tea"
ethos search --agent ada --query tea
ethos sweep
