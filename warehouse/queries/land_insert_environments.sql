-- land_insert_environments: environments of the batch not yet in the warehouse (one row per id).
insert into environments (environment_id, gpu_name, gpu_count, gpu_memory_gib, driver, cuda_driver,
                          cuda_runtime, cudnn, nccl, torch, python, os, kernel, cpu_model, cpu_cores,
                          ram_gib, pcie_gen_current, pcie_gen_max, pcie_width_current, pcie_width_max,
                          power_limit_w, container_image, doc)
with batch as (
    select *, row_number() over (partition by environment_id) as n from batch_environments
),
final as (
    select b.environment_id, b.gpu_name::varchar, b.gpu_count::integer, b.gpu_memory_gib::double,
           b.driver::varchar, b.cuda_driver::varchar, b.cuda_runtime::varchar, b.cudnn::varchar,
           b.nccl::varchar, b.torch::varchar, b.python::varchar, b.os::varchar, b.kernel::varchar,
           b.cpu_model::varchar, b.cpu_cores::integer, b.ram_gib::double,
           b.pcie_gen_current::integer, b.pcie_gen_max::integer, b.pcie_width_current::integer,
           b.pcie_width_max::integer, b.power_limit_w::double, b.container_image::varchar,
           b.doc::json
    from batch as b
    anti join environments as e on e.environment_id = b.environment_id
    where b.n = 1
)
select * from final
