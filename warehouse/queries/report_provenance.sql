-- What in this warehouse was not measured (labelled by `costgap demo`): count per scope and label.
with p as (
    select scope, label, note from provenance
),
final as (
    select scope, label, count(*) as items, any_value(note) as note from p group by scope, label
)
select * from final order by scope, label
