package io.relaykit.queue;

import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;

/**
 * AES-GCM for one user of a {@link FileJournal}'s key (the writer, the compactor, recovery: a
 * {@link Cipher} is not thread-safe). A sealed record is a random 96-bit nonce, the ciphertext
 * and a 128-bit tag ({@link #OVERHEAD} bytes more than the plain record); the associated data
 * binds it to its journal, file and position ({@link #bind}), so a record moved, replayed or
 * reordered fails authentication like a modified one. A segment header is authenticated the same
 * way with an empty plaintext ({@link #mac}).
 */
final class RecordCipher {
  static final int NONCE = 12;
  static final int TAG = 16;
  /** Bytes a sealed record has beyond its plain text. */
  static final int OVERHEAD = NONCE + TAG;
  /** Length of the associated data: journal id, file kind, sequence number, offset. */
  static final int BINDING = 16 + 1 + 8 + 8;
  static final byte KIND_SEGMENT = 0;
  static final byte KIND_BASE = 1;

  private final SecretKey key;
  private final Cipher cipher;
  private final SecureRandom random;
  private final byte[] binding = new byte[BINDING];

  RecordCipher(SecretKey key, SecureRandom random) {
    this.key = key;
    this.random = random;
    try {
      this.cipher = Cipher.getInstance("AES/GCM/NoPadding");
    } catch (GeneralSecurityException e) {
      throw new JournalException("AES/GCM is not available in this JVM: " + e, e);
    }
  }

  /** Another instance with the same key, for another thread. */
  RecordCipher copy() {
    return new RecordCipher(key, random);
  }

  /**
   * The associated data of the record at {@code offset} of file ({@code kind}, {@code seq}) of
   * journal {@code journalId}, in a buffer this instance reuses.
   */
  byte[] bind(byte[] journalId, byte kind, long seq, long offset) {
    System.arraycopy(journalId, 0, binding, 0, 16);
    binding[16] = kind;
    SegmentFormat.putLong(binding, 17, seq);
    SegmentFormat.putLong(binding, 25, offset);
    return binding;
  }

  /** Seals {@code plain[0, length)}; {@code aad} may be null (format 1). */
  byte[] seal(byte[] plain, int length, byte[] aad) {
    byte[] nonce = new byte[NONCE];
    random.nextBytes(nonce);
    try {
      cipher.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(TAG * 8, nonce));
      if (aad != null) {
        cipher.updateAAD(aad);
      }
      byte[] out = new byte[NONCE + cipher.getOutputSize(length)];
      System.arraycopy(nonce, 0, out, 0, NONCE);
      cipher.doFinal(plain, 0, length, out, NONCE);
      return out;
    } catch (GeneralSecurityException e) {
      throw new JournalException("cannot encrypt a journal record: " + e, e);
    }
  }

  /**
   * Opens {@code sealed[0, length)} against {@code aad} (null in format 1).
   *
   * @throws AEADBadTagException when the key is wrong or anything sealed or bound was changed
   */
  byte[] open(byte[] sealed, int length, byte[] aad) throws AEADBadTagException {
    if (length < OVERHEAD) {
      throw new AEADBadTagException("sealed record too short: " + length + " bytes");
    }
    try {
      cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG * 8, sealed, 0, NONCE));
      if (aad != null) {
        cipher.updateAAD(aad);
      }
      return cipher.doFinal(sealed, NONCE, length - NONCE);
    } catch (AEADBadTagException e) {
      throw e;
    } catch (GeneralSecurityException e) {
      throw new JournalException("cannot decrypt a journal record: " + e, e);
    }
  }

  /** A nonce and tag ({@link #OVERHEAD} bytes) authenticating {@code data[0, length)}. */
  byte[] mac(byte[] data, int length) {
    byte[] aad = java.util.Arrays.copyOf(data, length);
    return seal(new byte[0], 0, aad);
  }

  /** Whether {@code mac} (from {@link #mac}) authenticates {@code data[0, length)}. */
  boolean verify(byte[] data, int length, byte[] mac) {
    try {
      open(mac, mac.length, java.util.Arrays.copyOf(data, length));
      return true;
    } catch (AEADBadTagException e) {
      return false;
    }
  }
}
