-- 001_core: the fact tables derived from bundles. Forward-only: never edit once shipped.
-- Every fact row points at its run (run_id = bundle_id) and each run at its environment row.

create table targets (
    target          varchar primary key,   -- id from deploy/targets.toml, or first seen in a bundle
    provider        varchar,
    region          varchar,
    instance_type   varchar,
    gpu_model       varchar,
    gpu_count       integer,
    billing_mode    varchar,               -- on_demand | monthly | yearly | spot
    work_pool       varchar,
    dispatch        varchar,               -- local | pool | import
    first_seen      timestamptz,
    updated_at      timestamptz
);

create table environments (
    environment_id     varchar primary key, -- sha256 of the canonical environment JSON
    gpu_name           varchar,
    gpu_count          integer,
    gpu_memory_gib     double,
    driver             varchar,
    cuda_driver        varchar,
    cuda_runtime       varchar,
    cudnn              varchar,
    nccl               varchar,
    torch              varchar,
    python             varchar,
    os                 varchar,
    kernel             varchar,
    cpu_model          varchar,
    cpu_cores          integer,
    ram_gib            double,
    pcie_gen_current   integer,
    pcie_gen_max       integer,
    pcie_width_current integer,
    pcie_width_max     integer,
    power_limit_w      double,
    container_image    varchar,
    doc                json                 -- the whole environment object as landed
);

create table runs (
    run_id          varchar primary key,    -- = bundle_id
    target          varchar not null,
    profile         varchar not null,
    probe_version   varchar not null,
    environment_id  varchar not null,
    started_at      timestamptz not null,
    finished_at     timestamptz not null,
    status          varchar not null,       -- ok | partial | failed
    origin_kind     varchar,                -- local | pool | import | cli
    flow_run_id     varchar,
    deployment      varchar,
    source_uri      varchar,                -- where the bundle was read from
    landed_at       timestamptz not null
);

create table attempts (
    run_id          varchar,                -- null for a Prefect attempt whose bundle never arrived
    target          varchar not null,
    task            varchar not null,
    attempt         integer not null,
    state           varchar not null,       -- completed | failed | crashed | cancelled | skipped | not_applicable
    error_kind      varchar,                -- oom | cuda_error | timeout | preempted | crash | other
    message         varchar,
    duration_s      double,
    started_at      timestamptz,
    source          varchar not null,       -- bundle | prefect
    source_id       varchar                 -- Prefect flow/task run id when source = 'prefect'
);

create table measurements (
    run_id              varchar not null,
    seq                 integer not null,   -- position in the bundle
    benchmark           varchar not null,
    benchmark_version   varchar not null,
    metric              varchar not null,
    value               double not null,
    unit                varchar not null,
    params              json,
    peak                double,
    peak_source         varchar,
    efficiency          double,             -- value / peak; null when the peak is unknown
    repeats             integer not null,
    statistic           varchar not null,
    spread              double,
    spread_kind         varchar,
    flags               varchar[],
    throttle_reasons    varchar[],
    sm_clock_mhz_min    double,
    sm_clock_mhz_median double,
    power_w_median      double,
    power_w_max         double,
    temp_c_max          double,
    primary key (run_id, seq)
);

create table finetunes (
    run_id                   varchar not null,
    seq                      integer not null,
    preset                   varchar not null,
    status                   varchar not null,
    mode                     varchar not null,
    precision                varchar not null,
    device                   varchar,
    n_gpus                   integer,
    params_total             bigint,
    params_trainable         bigint,
    params_non_embedding     bigint,
    seq_len                  integer,
    micro_batch              integer,
    compile                  boolean,
    activation_checkpointing boolean,
    steps_timed              integer,
    tokens_per_s             double,
    step_time_median_s       double,
    step_time_p10_s          double,
    step_time_p90_s          double,
    steady                   boolean,
    compile_s                double,
    mfu                      double,
    peak_mem_allocated_gib   double,
    peak_mem_reserved_gib    double,
    energy_j                 double,
    j_per_token              double,
    kwh_per_mtok             double,
    loss_first               double,
    loss_last                double,
    scaling_efficiency       double,
    step_time_s              double[],
    window_tokens_per_s      double[],
    message                  varchar,
    primary key (run_id, seq)
);

create table telemetry (
    run_id        varchar not null,
    t             double not null,          -- seconds since the run's started_at
    gpu           integer not null,
    util          double,
    mem_util      double,
    power_w       double,
    sm_clock_mhz  double,
    temp_c        double,
    phase         varchar
);

create table validation_results (
    validation_id  varchar not null,        -- one id per validated batch
    run_id         varchar,                 -- the bundle the expectation concerned
    suite          varchar not null,
    expectation    varchar not null,
    column_name    varchar,
    success        boolean not null,
    observed       varchar,
    validated_at   timestamptz not null
);

create table quarantine (
    bundle_id       varchar primary key,    -- content address; sha256 of the raw bytes if unparseable
    source_uri      varchar,
    target          varchar,
    reason          varchar not null,
    failed          json,                   -- failed expectations or the parse error
    raw             varchar,                -- the bundle as received (truncated if huge)
    quarantined_at  timestamptz not null
);
