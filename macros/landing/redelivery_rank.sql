{#- 1 for the first delivery of a source record, 2.. for the same record delivered again
    (same Kafka partition and offset: a connector restart re-sends a range it had landed).
    The first is the earliest load, then file, then line, so one build over several loads
    picks the same delivery as one build per load. A record without a valid identity is its
    own first delivery (it is rejected for that reason anyway). -#}
{% macro redelivery_rank(partition_column='kafka_partition', offset_column='kafka_offset') %}
    case
        when {{ partition_column }} is null or {{ offset_column }} is null then 1
        else row_number() over (
            partition by {{ partition_column }}, {{ offset_column }}
            order by _load_id asc, _source_file asc, _source_line asc
        )
    end
{%- endmacro %}
