#include "load/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "load/input_error.h"

namespace ringsim {
namespace {

std::string mib(std::size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Why `st` is not something a reader may read whole, or "" when it is a regular file.
std::string not_a_file(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "is a folder";
  if (S_ISFIFO(st.st_mode)) return "is a pipe (FIFO), which could block or never end";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "is a device, not a file";
  if (S_ISSOCK(st.st_mode)) return "is a socket";
  return "is not a regular file";
}

// "a scenario file", "an nccl-tests log file".
std::string a_file(const std::string& kind) {
  const bool vowel =
      !kind.empty() && (std::string("aeiouAEIOU").find(kind[0]) != std::string::npos || kind.rfind("nccl", 0) == 0);
  return (vowel ? "an " : "a ") + kind + " file";
}

}  // namespace

std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& kind) {
  const SourceLocation at{path, 0, 0, ""};
  // O_NONBLOCK: opening a FIFO with no writer must not block before it can be refused.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw InputError(at, "cannot read the " + kind + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputError(at, "cannot read the " + kind + ": " + std::strerror(errno));
  if (const std::string why = not_a_file(st); !why.empty()) throw InputError(at, why + "; expected " + a_file(kind));
  auto too_large = [&] {
    return InputError(at, "the file is larger than " + mib(max_bytes) + ", the most ringsim reads as " + a_file(kind) +
                              "; is it the right file?");
  };
  if (static_cast<std::size_t>(st.st_size) > max_bytes) throw too_large();
  // Read up to one byte past the limit: a file that grows while it is read is still bounded.
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char block[1 << 16];
  while (text.size() <= max_bytes) {
    const ssize_t n = ::read(f.fd, block, sizeof block);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(at, "cannot read the " + kind + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(block, static_cast<std::size_t>(n));
  }
  if (text.size() > max_bytes) throw too_large();
  return text;
}

namespace {

// The length of the UTF-8 sequence starting at s[i] and its code point; 0 when the bytes are not valid UTF-8.
std::size_t utf8_at(const std::string& s, std::size_t i, char32_t& cp) {
  const auto b = static_cast<unsigned char>(s[i]);
  const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 0x2) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  return n;
}

// Characters a terminal shows as nothing, or acts on: controls, bidirectional marks, zero-width and
// non-breaking spaces, the byte-order mark.
bool invisible(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) || cp == 0xfeff;
}

}  // namespace

std::string printable(const std::string& s, std::size_t max_chars) {
  std::string out;
  std::size_t shown = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (shown >= max_chars) return out + "...";
    char32_t cp = 0;
    const std::size_t n = utf8_at(s, i, cp);
    char esc[16];
    if (n == 0) {
      std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += esc;
    } else if (invisible(cp)) {
      std::snprintf(esc, sizeof esc, cp < 0x80 ? "\\x%02x" : "\\u%04x", static_cast<unsigned>(cp));
      out += esc;
    } else {
      out.append(s, i, n);
    }
    i += n == 0 ? 1 : n;
    ++shown;
  }
  return out;
}

}  // namespace ringsim
