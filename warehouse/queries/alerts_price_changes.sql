-- alerts_price_changes: every price period that follows an earlier one for a target's key (the first
-- period is the starting price, not a change), with when it landed (its import). $billing: the cost
-- options' billing mode, or null for each target's own billing_mode.
with t as (
    select target, provider, region, instance_type, billing_mode as target_billing from targets
),
periods as (
    select t.target, p.provider, p.region, p.instance_type, p.billing_mode, p.currency, p.price_per_hour,
           p.effective_from, p.source, i.imported_at,
           lag(p.price_per_hour) over (partition by t.target, p.billing_mode order by p.effective_from)
               as previous_price
    from prices p
    join t on p.provider = t.provider and p.instance_type = t.instance_type
          and (p.region = t.region or t.region is null)
    left join price_imports i on i.import_id = p.import_id
    where p.billing_mode = coalesce($billing, t.target_billing)
),
final as (
    select target, provider, region, instance_type, billing_mode, currency, previous_price, price_per_hour,
           effective_from, source, coalesce(imported_at, effective_from) as imported_at
    from periods
    where previous_price is not null
)
select * from final order by effective_from, target
