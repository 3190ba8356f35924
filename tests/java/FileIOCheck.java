// Exercises binlake's S3 FileIO (lib/binlake/lake/jvm/HttpS3FileIO.java) against a live S3
// endpoint; tests/test_s3_warehouse.py compiles and runs it against a moto server that checks
// signatures, and checks what it prints. Usage: FileIOCheck s3://bucket/prefix/ N
// (credentials and endpoint from the environment, as on executors).

import binlake.iceberg.HttpS3FileIO;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.SeekableInputStream;

public class FileIOCheck {
  static byte[] data(int n) {
    byte[] b = new byte[n];
    new Random(42).nextBytes(b);
    return b;
  }

  public static void main(String[] args) throws Exception {
    String base = args[0];
    int many = Integer.parseInt(args[1]);
    HttpS3FileIO io = new HttpS3FileIO();
    Map<String, String> props = new HashMap<>();
    props.put("s3.endpoint", System.getenv("BINLAKE_S3_ENDPOINT_URL"));
    io.initialize(props);

    // a key with a space, '=', '+' and non-ASCII characters; 9 MB (more than two chunks)
    String loc = base + "odd key/day=2024-01-01/a+b ü.bin";
    byte[] want = data(9 * 1024 * 1024 + 123);
    try (OutputStream out = io.newOutputFile(loc).create()) {
      out.write(want, 0, 1000);
      out.write(want[1000]);
      out.write(want, 1001, want.length - 1001);
    }
    System.out.println("written " + loc);
    StringBuilder hex = new StringBuilder();
    for (byte x : java.security.MessageDigest.getInstance("SHA-256").digest(want)) {
      hex.append(String.format("%02x", x));
    }
    System.out.println("sha256 " + hex);
    try {
      io.newOutputFile(loc).create();
      System.out.println("create-again NOT REFUSED");
    } catch (AlreadyExistsException e) {
      System.out.println("create-again refused");
    }
    InputFile in = io.newInputFile(loc);
    System.out.println("length " + in.getLength() + " exists " + in.exists());
    System.out.println("missing-exists " + io.newInputFile(base + "nope").exists());
    try {
      io.newInputFile(base + "nope").getLength();
      System.out.println("missing-length NOT REFUSED");
    } catch (NotFoundException e) {
      System.out.println("missing-length NotFoundException");
    }

    // reads at random positions and lengths, byte by byte and in blocks, against the bytes
    Random r = new Random(7);
    int bad = 0;
    try (SeekableInputStream s = in.newStream()) {
      byte[] all = new byte[want.length];
      int got = 0;
      while (got < all.length) {
        int n = s.read(all, got, Math.min(all.length - got, 1 + r.nextInt(5_000_000)));
        if (n < 0) break;
        got += n;
      }
      if (got != want.length || !Arrays.equals(all, want) || s.read() != -1) bad++;
      for (int i = 0; i < 200; i++) {
        long pos = (long) r.nextInt(want.length);
        s.seek(pos);
        if (s.getPos() != pos) bad++;
        if (i % 2 == 0) {
          int b = s.read();
          if (b != (want[(int) pos] & 0xff)) bad++;
        } else {
          int len = 1 + r.nextInt(Math.min(want.length - (int) pos, 6_000_000));
          byte[] buf = new byte[len];
          int off = 0;
          while (off < len) {
            int n = s.read(buf, off, len - off);
            if (n <= 0) break;
            off += n;
          }
          if (off != len || !Arrays.equals(buf, Arrays.copyOfRange(want, (int) pos,
              (int) pos + len))) bad++;
        }
      }
      byte[] tail = new byte[8];
      ((org.apache.iceberg.io.RangeReadable) s).readTail(tail, 0, 8);
      if (!Arrays.equals(tail, Arrays.copyOfRange(want, want.length - 8, want.length))) bad++;
      byte[] mid = new byte[100];
      ((org.apache.iceberg.io.RangeReadable) s).readFully(4_000_000, mid, 0, 100);
      if (!Arrays.equals(mid, Arrays.copyOfRange(want, 4_000_000, 4_000_100))) bad++;
    }
    System.out.println("read-mismatches " + bad);

    // listing (the caller put `many` objects under many/) and prefix deletion
    int listed = 0;
    int listBad = 0;
    for (FileInfo f : io.listPrefix(base + "many/")) {
      if (f.size() != 3 || f.createdAtMillis() <= 0) listBad++;
      if (!f.location().equals(base + "many/" + String.format("%05d", listed))) listBad++;
      listed++;
    }
    System.out.println("listed " + listed);
    System.out.println("list-mismatches " + listBad);
    io.deletePrefix(base + "many/");
    int left = 0;
    for (FileInfo f : io.listPrefix(base + "many/")) left++;
    System.out.println("left-after-delete " + left);
    String small = base + "small";
    try (OutputStream out = io.newOutputFile(small).createOrOverwrite()) {
      out.write(new byte[] {1, 2, 3});
    }
    io.deleteFile(small);
    System.out.println("deleted-exists " + io.newInputFile(small).exists());
    io.deleteFile(small); // deleting a missing object is not an error
    System.out.println("done");
  }
}
