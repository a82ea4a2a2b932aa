-- 010_landing: bookkeeping for landing (owner: warehouse/landing). Forward-only.
-- quarantine.kind tells a bundle that parsed but failed validation ('quarantined') from a file
-- that could not be read as a bundle at all ('rejected', bundle_id = sha256 of the raw bytes).
alter table quarantine add column kind varchar default 'quarantined';
alter table quarantine add column field varchar;      -- the first failing field, for the message
alter table quarantine add column batch_id varchar;   -- the landing batch that saw it

-- One row per landing batch: what came in, what landed, when. Audit trail for crash tests.
create table land_batches (
    batch_id      varchar primary key,
    source        varchar not null,                    -- cli | flow | rebuild | bench
    files         integer not null,
    landed        integer not null,
    duplicates    integer not null,
    quarantined   integer not null,
    rejected      integer not null,
    started_at    timestamptz not null,
    finished_at   timestamptz not null
);
