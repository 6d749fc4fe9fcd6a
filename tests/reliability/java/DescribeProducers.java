// The broker's own view of who wrote to a partition: its active idempotent producers (Admin.describeProducers).
// A producer without idempotence has no producer id, so the broker keeps no state of it and it is not listed.
// Usage: java -cp '<kafka libs>/*' DescribeProducers.java BOOTSTRAP TOPIC:PARTITION...
// Prints one line per producer state: topic partition producerId epoch lastSequence.

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;

public class DescribeProducers {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        List<TopicPartition> partitions = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            int colon = args[i].lastIndexOf(':');
            partitions.add(new TopicPartition(args[i].substring(0, colon), Integer.parseInt(args[i].substring(colon + 1))));
        }
        try (Admin admin = Admin.create(props)) {
            admin.describeProducers(partitions).all().get().forEach((tp, found) -> found.activeProducers().forEach(
                state -> System.out.println(tp.topic() + " " + tp.partition() + " " + state.producerId() + " "
                    + state.producerEpoch() + " " + state.lastSequence())));
        }
    }
}
