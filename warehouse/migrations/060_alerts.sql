-- 060_alerts: what costgap told people (owner: tasks/alerts). Forward-only: never edit once shipped.
-- One row per change an emitted Prefect event told (a quarantine event telling three bundles is three
-- rows with one event_id). It is what keeps alerts from storming: a change is told once, a target that
-- keeps failing at most once per `failure_repeat_hours`. Operational state, not derived from bundles:
-- `costgap rebuild` starts it empty, and the next compare tells only what is news then.
create table alerts_sent (
    key          varchar not null,      -- what it is about: cheapest/<preset>, failed/<target>, price/<target>/<billing>...
    fingerprint  varchar not null,      -- which state of it: the new cheapest target, a streak and its count, a period
    episode      varchar,               -- repeats of one condition share it (a failure streak's first failure)
    event        varchar not null,      -- the Prefect event name, costgap.cheapest.changed ...
    target       varchar,               -- the event's resource: costgap.target.<target>
    occurred_at  timestamptz not null,  -- when it happened in the data (window end, failure, effective date)
    sent_at      timestamptz not null,  -- when the event was emitted (wall clock): the repeat rule reads it
    event_id     varchar,               -- the Prefect event's id
    source       varchar not null,      -- compare | prices | cli: who emitted it
    payload      json,                  -- the change's figures as the event carried them
    primary key (key, fingerprint)
);
