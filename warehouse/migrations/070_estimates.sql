-- 070_estimates: the estimator's track record (owner: tasks/cost/estimate_track.py). Forward-only.
-- One row per estimate made for an instance type that had not been measured (`costgap estimate
-- --record`). When that type is later measured, the measurement, its date and the error are filled in
-- once and kept: the model's track record is data. An estimate never enters runs, finetunes, the cost
-- model's inputs, a gap, an alert or gap_history.csv; nothing reads this table but the estimator's
-- own surfaces (`costgap estimate`, the Candidates page). Operational state like alerts_sent: not
-- derived from bundles, so `costgap rebuild` starts it empty.
create table estimates (
    estimate_id        varchar primary key,  -- sha256 of (target, preset, model_version, estimated_at)
    target             varchar not null,     -- the target the estimate is for (deploy/targets.toml id)
    provider           varchar,
    region             varchar,
    instance_type      varchar,
    gpu_key            varchar not null,     -- gpu_specs.json row the estimate used
    gpu_count          integer not null,
    preset             varchar not null,
    precision          varchar not null,     -- bf16 | fp16: what the estimate assumed
    fit                varchar not null,     -- as measured | smaller micro-batch | checkpointing
    model_version      varchar not null,     -- tasks.cost.estimate.MODEL_VERSION when it was made
    estimated_at       timestamptz not null,
    tokens_per_s       double not null,      -- the estimate
    tokens_per_s_lo    double not null,      -- its 90% interval
    tokens_per_s_hi    double not null,
    assumptions        varchar[],
    measured_at        timestamptz,          -- the first successful run of (target, preset) after estimated_at
    measured_runs      integer,
    measured_tokens_per_s double,            -- median over the runs in the cost window ending at measured_at
    error              double,               -- estimate / measurement - 1 (signed: + = the estimate was high)
    inside             boolean,              -- the measurement fell inside the 90% interval
    scored_at          timestamptz
);
