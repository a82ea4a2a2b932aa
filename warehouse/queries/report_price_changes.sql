-- Price changes that apply to each target: every effective_from of its (provider, region, instance type).
with t as (
    select target, provider, region, instance_type, coalesce(billing_mode, 'on_demand') as billing_mode
    from targets
),
final as (
    select t.target, p.effective_from as changed_at, p.price_per_hour, p.currency, p.billing_mode, p.source
    from prices p
    join t on p.provider = t.provider and p.instance_type = t.instance_type
          and (p.region = t.region or t.region is null)
    where p.billing_mode = $billing
)
select * from final order by changed_at
