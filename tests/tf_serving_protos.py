"""TF Serving's ``BatchingParameters`` message, the schema of ``--batching_parameters_file``.

tensorflow-serving-api does not ship it (its session_bundle_config_pb2 is not in the wheel), so the
message is written out here from TF Serving's public definition,
tensorflow_serving/servables/tensorflow/session_bundle_config.proto:

    message BatchingParameters {
      google.protobuf.Int64Value max_batch_size = 1;
      google.protobuf.Int64Value batch_timeout_micros = 2;
      google.protobuf.Int64Value max_enqueued_batches = 3;
      google.protobuf.Int64Value num_batch_threads = 4;
      google.protobuf.StringValue thread_pool_name = 5;
      repeated int64 allowed_batch_sizes = 6;
      bool pad_variable_length_inputs = 7;
    }

and built with protobuf's own descriptor machinery, so that a file is read by protobuf's text
format parser against TF Serving's field names and types, not by kbert's code.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2

_F = descriptor_pb2.FieldDescriptorProto
FIELDS = [  # (name, number, label, type, wrapper message or None)
    ("max_batch_size", 1, _F.LABEL_OPTIONAL, _F.TYPE_MESSAGE, ".google.protobuf.Int64Value"),
    ("batch_timeout_micros", 2, _F.LABEL_OPTIONAL, _F.TYPE_MESSAGE, ".google.protobuf.Int64Value"),
    ("max_enqueued_batches", 3, _F.LABEL_OPTIONAL, _F.TYPE_MESSAGE, ".google.protobuf.Int64Value"),
    ("num_batch_threads", 4, _F.LABEL_OPTIONAL, _F.TYPE_MESSAGE, ".google.protobuf.Int64Value"),
    ("thread_pool_name", 5, _F.LABEL_OPTIONAL, _F.TYPE_MESSAGE, ".google.protobuf.StringValue"),
    ("allowed_batch_sizes", 6, _F.LABEL_REPEATED, _F.TYPE_INT64, None),
    ("pad_variable_length_inputs", 7, _F.LABEL_OPTIONAL, _F.TYPE_BOOL, None),
]


def batching_parameters_class():
    """The BatchingParameters message class, in a descriptor pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="tensorflow_serving/servables/tensorflow/session_bundle_config.proto",
        package="tensorflow.serving", syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    message = file.message_type.add(name="BatchingParameters")
    for name, number, label, kind, type_name in FIELDS:
        field = message.field.add(name=name, number=number, label=label, type=kind)
        if type_name:
            field.type_name = type_name
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))
