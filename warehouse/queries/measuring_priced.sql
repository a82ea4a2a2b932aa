-- measuring_priced: every recorded probe run's instance span, with the price of its instance in force at
-- the run's start (ASOF JOIN on effective_from; a closed period does not price runs at or after its
-- effective_to), converted to $currency at the FX rates in force on the run's UTC day (USD pivot), as
-- cost_priced_runs.sql does for the cost model. The price key is the target's own (targets table);
-- $billing null = each target's billing_mode. price_per_hour is null where no price was in force;
-- fx_missing marks a priced run whose rate is missing (the caller raises). No arithmetic on money here:
-- tasks/cost/measuring.py multiplies.
with t as (
    select target, provider, region, instance_type,
           coalesce(cast($billing as varchar), billing_mode, 'on_demand') as billing_mode
    from targets
),
target_prices as (
    select t.target, p.effective_from, p.effective_to, p.currency, p.price_per_hour
    from t
    join prices p using (provider, region, instance_type, billing_mode)
),
m as (
    select compare_run_id, target, dispatch, probe_flow_run_id, span_source, started_at, finished_at,
           instance_seconds, cast(timezone('UTC', started_at) as date) as run_day
    from measuring_runs
),
priced as (
    select m.*, tp.currency as price_currency,
           case when tp.effective_to is null or m.started_at < tp.effective_to then tp.price_per_hour end
               as price_native
    from m
    asof left join target_prices tp on m.target = tp.target and m.started_at >= tp.effective_from
),
fx_from as (
    select p.*, f.units_per_usd as from_units_per_usd
    from priced p
    asof left join fx_rates f on p.price_currency = f.currency and p.run_day >= f.rate_date
),
fx_to as (
    select p.*, f.units_per_usd as to_units_per_usd
    from fx_from p
    asof left join (select * from fx_rates where currency = $currency) f on p.run_day >= f.rate_date
),
final as (
    select compare_run_id, target, dispatch, probe_flow_run_id, span_source, started_at, finished_at,
           instance_seconds, price_currency, price_native,
           price_in_currency(price_native, price_currency, $currency, from_units_per_usd, to_units_per_usd)
               as price_per_hour,  -- migration 090: the one conversion
           price_fx_missing(price_native, price_currency, $currency, from_units_per_usd, to_units_per_usd)
               as fx_missing
    from fx_to
    order by started_at, target
)
select * from final
