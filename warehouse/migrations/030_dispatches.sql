-- 030_dispatches: what the compare flow asked of each target, and what came of it (owner: flows).
-- One row per (compare flow run, target). A target whose bundle never arrived (its worker died,
-- it timed out, the probe failed twice) is a row here with status <> 'landed' and run_id null;
-- its Prefect attempts sit in `attempts` with source = 'prefect' and run_id null.
create table dispatches (
    compare_run_id     varchar not null,   -- Prefect flow run id of the compare flow
    target             varchar not null,
    dispatch           varchar not null,   -- local | pool | import
    status             varchar not null,   -- landed | duplicate | failed | crashed | timeout | cancelled | missing | quarantined
    probe_flow_run_id  varchar,            -- Prefect flow run id of the probe (null for import)
    run_id             varchar,            -- the bundle that landed (null when none)
    message            varchar,
    started_at         timestamptz,
    finished_at        timestamptz,
    recorded_at        timestamptz not null default now(),
    primary key (compare_run_id, target)
);
