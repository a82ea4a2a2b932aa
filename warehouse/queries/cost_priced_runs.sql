-- cost_priced_runs: every measured fine-tune run in ($start, $end], priced as of its start, once per
-- window of _cost_windows (cost_windows.sql) it falls in (`period`: 0 = the newest window). A single
-- window is the case of one period. Materialised as temp table _cost_runs.
-- Price: ASOF JOIN on effective_from (a closed period does not price runs at or after its effective_to);
-- the price key (provider, region, instance_type, billing_mode) is resolved per target first, so the
-- ASOF JOIN matches on the target alone. FX: the rate in force on the run's UTC day, from an ASOF JOIN
-- over a small (currency x day) calendar, then hash-joined for the price currency and for $currency;
-- USD is the pivot. fx_missing marks a priced run whose rate is missing (the caller raises: a missing
-- rate is an error, never 1.0). $billing null = each target's own billing_mode (targets table).
-- Measured = status ok or unstable (issue 37.5: a run whose steady-state rule did not converge still ran
-- to the end; it counts, flagged, its windows' spread widening the interval: tasks/cost/table.py).
with t as (
    select target, provider, region, instance_type, coalesce(gpu_count, 0) as gpu_count,
           coalesce(cast($billing as varchar), billing_mode, 'on_demand') as billing_mode
    from targets
),
target_prices as (
    select t.target, p.effective_from, p.effective_to, p.currency, p.price_per_hour, p.last_seen_at, p.source
    from t
    join prices p using (provider, region, instance_type, billing_mode)
),
ft as (
    select r.run_id, r.target, f.preset, r.started_at, r.environment_id, f.tokens_per_s, f.mfu, f.kwh_per_mtok,
           f.scaling_efficiency, f.params_total, f.mode, f.n_gpus, f.peak_mem_allocated_gib, f.status,
           f.window_tokens_per_s
    from runs r
    join finetunes f using (run_id)
    where f.status in ('ok', 'unstable') and f.tokens_per_s > 0
      and r.started_at > $start and r.started_at <= $end
      and ($targets is null or list_contains($targets, r.target))
    -- one figure per (run, preset): the instance-level one, i.e. the row that used the most GPUs
    -- (a multi-GPU probe also records its n=1 baseline for the same preset)
    qualify row_number() over (partition by r.run_id, f.preset
                               order by coalesce(f.n_gpus, 1) desc, f.tokens_per_s desc) = 1
),
priced as (
    select ft.*, coalesce(t.gpu_count, 0) as gpu_count, tp.currency as price_currency,
           case when tp.effective_to is null or ft.started_at < tp.effective_to then tp.price_per_hour end
               as price_native,
           case when tp.effective_to is null or ft.started_at < tp.effective_to then tp.effective_from end
               as price_effective_from,
           case when tp.effective_to is null or ft.started_at < tp.effective_to then tp.last_seen_at end
               as price_last_seen_at,
           case when tp.effective_to is null or ft.started_at < tp.effective_to then tp.source end
               as price_source
    from ft
    left join t using (target)
    asof left join target_prices tp
      on ft.target = tp.target and ft.started_at >= tp.effective_from
),
span as (
    select floor(epoch(min(started_at)) / 86400)::bigint as first_day,
           floor(epoch(max(started_at)) / 86400)::bigint as last_day
    from ft
),
fx as (
    select currency, epoch(rate_date)::bigint // 86400 as rate_day, units_per_usd from fx_rates
),
currency_days as (
    select c.currency, d.day
    from (select distinct currency from fx) c,
         (select range as day from span, range(span.first_day, span.last_day + 1)) d
),
fx_days as (  -- the rate in force on each UTC day: the latest rate dated on or before it
    select cd.currency, cd.day, f.units_per_usd
    from currency_days cd
    asof join fx f on cd.currency = f.currency and cd.day >= f.rate_day
),
with_day as (
    select *, floor(epoch(started_at) / 86400)::bigint as run_day from priced
),
with_to as (
    select o.*, ff.units_per_usd as from_units_per_usd, ft2.units_per_usd as to_units_per_usd
    from with_day o
    left join fx_days ff on ff.currency = o.price_currency and ff.day = o.run_day
    left join fx_days ft2 on ft2.currency = $currency and ft2.day = o.run_day
),
final as (
    select w.period, run_id, target, preset, started_at, environment_id, tokens_per_s, mfu, kwh_per_mtok,
           scaling_efficiency, params_total, mode, n_gpus, peak_mem_allocated_gib, status, window_tokens_per_s,
           gpu_count, price_currency,
           price_native, price_effective_from, price_last_seen_at, price_source,
           price_in_currency(price_native, price_currency, $currency, from_units_per_usd, to_units_per_usd)
               as price_per_hour,  -- migration 090: the one conversion
           price_fx_missing(price_native, price_currency, $currency, from_units_per_usd, to_units_per_usd)
               as fx_missing,
           case when price_currency <> 'USD' and from_units_per_usd is null then price_currency
                else $currency end as fx_missing_currency
    from with_to
    join _cost_windows w on with_to.started_at > w.window_start and with_to.started_at <= w.window_end
)
select * from final
