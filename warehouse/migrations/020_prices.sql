-- 020_prices: the price book (dated, sourced, never overlapping per key), its import log, and FX.
-- Forward-only: never edit once shipped. Owner: pricing (tasks/pricing/).

create table price_imports (
    import_id      varchar primary key,    -- sha256 of (source_kind, source, fetched_at, rows)
    source_kind    varchar not null,       -- csv | yaml | skypilot | azure | ...: the plug-in's name
    source         varchar not null,       -- the file path or URL the rows came from
    fetched_at     timestamptz not null,   -- when the source was read (file mtime or HTTP time)
    imported_at    timestamptz not null,
    rows_in        integer not null,       -- rows the source produced
    rows_new       integer not null,       -- periods opened
    rows_unchanged integer not null,       -- rows that matched the open period exactly
    rows_closed    integer not null        -- open periods closed by a changed price
);

create table prices (
    provider        varchar not null,      -- joins targets.provider
    region          varchar not null,      -- joins targets.region
    instance_type   varchar not null,      -- joins targets.instance_type
    billing_mode    varchar not null,      -- on_demand | monthly | yearly | spot
    currency        varchar not null,      -- ISO 4217, as quoted by the source
    price_per_hour  double not null,       -- in `currency`; monthly /730 h, yearly /8760 h
    original_amount double not null,       -- the figure the source quoted, in `currency`
    original_period varchar not null,      -- hour | month | year: what original_amount covers
    effective_from  timestamptz not null,  -- start of the period (inclusive)
    effective_to    timestamptz,           -- end of the period (exclusive); null = still open
    source          varchar not null,      -- URL or file (with line) the row came from
    fetched_at      timestamptz not null,  -- when this price was first seen
    last_seen_at    timestamptz not null,  -- the latest import that confirmed it: drives `stale`
    import_id       varchar not null,      -- price_imports row that opened the period
    primary key (provider, region, instance_type, billing_mode, effective_from)
);

create table fx_rates (
    currency       varchar not null,       -- ISO 4217; USD is the pivot and has no rows
    rate_date      date not null,          -- the rate applies from this date until the next row
    units_per_usd  double not null,        -- how many `currency` one USD buys
    source         varchar not null,       -- where the rate came from (publisher, URL or file)
    primary key (currency, rate_date)
);
