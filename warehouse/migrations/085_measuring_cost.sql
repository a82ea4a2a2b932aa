-- 085_measuring_cost: what measuring itself costs (owner: flows/compare.py records; tasks/cost/measuring.py
-- prices and sums). Forward-only. Operational rows from Prefect, not from bundles: `costgap rebuild`
-- carries them over (tasks/landing/rebuild.py CARRY_OVER).

-- One row per dispatched probe run: how long its instance was held. `span_source` says where the span
-- came from: 'prefect' = the probe flow run's start_time..end_time as the Prefect API recorded them.
-- Its cost is never stored: it is the price in force at started_at (ASOF on the price book) times
-- instance_seconds, computed in one place (tasks/cost/measuring.py), so a corrected price corrects it.
create table measuring_runs (
    compare_run_id     varchar not null,   -- the compare flow run that dispatched it
    target             varchar not null,
    dispatch           varchar not null,   -- local | pool | kubernetes
    probe_flow_run_id  varchar not null,
    span_source        varchar not null,   -- prefect
    started_at         timestamptz not null,
    finished_at        timestamptz not null,
    instance_seconds   double not null,    -- finished_at - started_at, >= 0
    recorded_at        timestamptz not null default now(),
    primary key (compare_run_id, target)
);

-- One row per target a compare run did not dispatch because the run would have exceeded a monthly
-- budget (`costgap run --max-spend`). Amounts in `currency`, the reporting currency of the budget.
create table dispatch_skips (
    compare_run_id     varchar not null,
    target             varchar not null,
    scope              varchar not null,   -- target | total: which budget it would have exceeded
    month              date not null,      -- first day of the UTC month the budget is for
    currency           varchar not null,
    budget             double not null,
    spent              double not null,    -- already spent on measuring this month (in scope)
    expected           double not null,    -- what this run was expected to cost
    message            varchar not null,
    skipped_at         timestamptz not null,
    primary key (compare_run_id, target)
);
