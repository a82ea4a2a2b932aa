-- 050_provenance: labels for data that was not measured (e.g. the synthetic history and illustrative
-- prices that `costgap demo` adds). The report shows every label on the page itself.
create table provenance (
    scope      varchar not null,            -- run | price_import | target
    key        varchar not null,            -- run_id, import_id or target
    label      varchar not null,            -- synthetic | illustrative
    note       varchar,                     -- how it was made, in one sentence
    created_at timestamptz not null default now(),
    primary key (scope, key)
);
