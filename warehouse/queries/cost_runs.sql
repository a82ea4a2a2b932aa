-- cost_runs: every successful fine-tune run in ($start, $end], priced as of the run's start.
-- Price: ASOF JOIN on effective_from (a closed period does not price runs after its effective_to).
-- FX: ASOF JOIN on rate_date for the price currency and for the reporting currency $currency.
-- $billing null = each target's own billing_mode (targets table), else that mode for every target.
with t as (
    select target, provider, region, instance_type, coalesce(gpu_count, 0) as gpu_count,
           coalesce(cast($billing as varchar), billing_mode, 'on_demand') as billing_mode
    from targets
),
ft as (
    select r.run_id, r.target, f.preset, r.started_at, cast(r.started_at as date) as run_date,
           r.environment_id, f.tokens_per_s, f.mfu, f.kwh_per_mtok, f.scaling_efficiency,
           f.params_total, f.mode, f.n_gpus, f.peak_mem_allocated_gib
    from runs r
    join finetunes f using (run_id)
    where f.status = 'ok' and f.tokens_per_s > 0
      and r.started_at > $start and r.started_at <= $end
),
ft_t as (
    select ft.*, t.provider, t.region, t.instance_type, t.billing_mode, coalesce(t.gpu_count, 0) as gpu_count
    from ft
    left join t using (target)
),
priced as (
    select ft_t.*, p.currency as price_currency, p.price_per_hour as price_native,
           p.effective_from as price_effective_from, p.effective_to as price_effective_to,
           p.last_seen_at as price_last_seen_at, p.source as price_source
    from ft_t
    asof left join prices p
      on ft_t.provider = p.provider and ft_t.region = p.region
     and ft_t.instance_type = p.instance_type and ft_t.billing_mode = p.billing_mode
     and ft_t.started_at >= p.effective_from
),
open_priced as (
    select * replace (
        case when price_effective_to is null or started_at < price_effective_to then price_native end as price_native)
    from priced
),
fx_from as (
    select o.*, f.units_per_usd as from_units_per_usd
    from open_priced o
    asof left join fx_rates f on o.price_currency = f.currency and o.run_date >= f.rate_date
),
fx_to_rates as (
    select rate_date, units_per_usd from fx_rates where currency = $currency
),
fx_to as (
    select o.*, q.units_per_usd as to_units_per_usd
    from fx_from o
    asof left join fx_to_rates q on o.run_date >= q.rate_date
),
final as (
    select *,
        case
            when price_native is null then null
            when price_currency = $currency then price_native
            else price_native
                 / (case when price_currency = 'USD' then 1.0 else from_units_per_usd end)
                 * (case when $currency = 'USD' then 1.0 else to_units_per_usd end)
        end as price_per_hour
    from fx_to
)
select * from final
