// pgjdbc through the PostgreSQL gate: a parameterised INSERT committed in its own transaction, enough times that
// pgjdbc switches to a named server-side statement (prepareThreshold 5) bound without its text; then a batch of
// three INSERTs (executeBatch) in one transaction. args[0]: the gate's port.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;

public class Pgjdbc {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0]
            + "/postgres?user=postgres&sslmode=prefer&prepareThreshold=5";
        try (Connection conn = DriverManager.getConnection(url)) {
            conn.setAutoCommit(false);
            String insert = "INSERT INTO t (k, v) VALUES (?, ?)";
            try (PreparedStatement ps = conn.prepareStatement(insert)) {
                for (int k = 0; k < 7; k++) {
                    ps.setInt(1, k);
                    ps.setString(2, "pgjdbc");
                    ps.executeUpdate();
                    conn.commit();
                }
                for (int k = 100; k < 103; k++) {
                    ps.setInt(1, k);
                    ps.setString(2, "pgjdbc batch");
                    ps.addBatch();
                }
                ps.executeBatch();
                conn.commit();
            }
        }
    }
}
