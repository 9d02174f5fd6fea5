#include <catch2/catch.hpp>

#include "load/units.h"

using namespace ringsim;

TEST_CASE("units: sizes, bandwidths, times and FLOP rates as people write them", "[units]") {
  CHECK(parse_quantity("64 MiB", Quantity::Bytes) == 64.0 * 1024 * 1024);
  CHECK(parse_quantity("64MiB", Quantity::Bytes) == 64.0 * 1024 * 1024);
  CHECK(parse_quantity("1.5 GB", Quantity::Bytes) == 1.5e9);
  CHECK(parse_quantity("512 B", Quantity::Bytes) == 512);
  CHECK(parse_quantity("0", Quantity::Bytes) == 0);
  CHECK(parse_quantity("12.5 GB/s", Quantity::Bandwidth) == 12.5e9);
  CHECK(parse_quantity("100 Gb/s", Quantity::Bandwidth) == 12.5e9);
  CHECK(parse_quantity("56Gbps", Quantity::Bandwidth) == 7e9);
  CHECK(parse_quantity("24000 Mb/s", Quantity::Bandwidth) == 3e9);
  CHECK(parse_quantity("1 GiB/s", Quantity::Bandwidth) == 1073741824.0);
  CHECK(parse_quantity("10 Gbit/s", Quantity::Bandwidth) == 1.25e9);
  CHECK(parse_quantity("1.5 us", Quantity::Time) == Approx(1.5e-6));
  CHECK(parse_quantity("1.5 \xC2\xB5s", Quantity::Time) == Approx(1.5e-6));
  CHECK(parse_quantity("5 ms", Quantity::Time) == Approx(5e-3));
  CHECK(parse_quantity("3 d", Quantity::Time) == Approx(3 * 86400.0));  // deadlines (ringsim plan)
  CHECK(parse_quantity(" 2 h ", Quantity::Time) == 7200);
  CHECK(parse_quantity("250 ns", Quantity::Time) == Approx(250e-9));
  CHECK(parse_quantity("15.7 TFLOPS", Quantity::FlopRate) == Approx(15.7e12));
  CHECK(parse_quantity("1e3 GFLOP/s", Quantity::FlopRate) == Approx(1e12));
  CHECK(parse_quantity("-3 GB/s", Quantity::Bandwidth) == -3e9);  // range checks belong to the caller
}

TEST_CASE("units: parsed strictly, with the reason and the closest unit", "[units]") {
  auto message = [](const char* text, Quantity q) {
    try {
      parse_quantity(text, q);
    } catch (const UnitError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message("64", Quantity::Bytes), Catch::Contains("the unit is missing"));
  CHECK_THAT(message("12.5 GB", Quantity::Bandwidth), Catch::Contains("did you mean") && Catch::Contains("GB/s"));
  CHECK_THAT(message("5 msec", Quantity::Time), Catch::Contains("'msec' is not a unit of a time"));
  CHECK_THAT(message("fast", Quantity::Bandwidth), Catch::Contains("no number in front"));
  CHECK_THAT(message("", Quantity::Time), Catch::Contains("empty value"));
  CHECK_THAT(message("64 mib", Quantity::Bytes), Catch::Contains("did you mean MiB"));
  CHECK_THAT(message("inf GB/s", Quantity::Bandwidth), Catch::Contains("no number") || Catch::Contains("finite"));
  CHECK_THAT(message("10 GB/s extra", Quantity::Bandwidth), Catch::Contains("is not a unit"));
}

TEST_CASE("units: formatting round-trips through the parser", "[units]") {
  CHECK(format_bytes(64.0 * 1024 * 1024) == "64 MiB");
  CHECK(format_bytes(28000.0 * 1073741824) == "27.34 TiB");  // not 2.8e+04 GiB
  CHECK(format_bandwidth(12.5e9) == "12.5 GB/s");
  CHECK(format_time(1.5e-6) == "1.5 us");
  CHECK(format_time(5e-3) == "5 ms");
  CHECK(parse_quantity(format_bytes(97.49 * 1048576), Quantity::Bytes) == Approx(97.49 * 1048576).epsilon(1e-3));
  CHECK(parse_quantity(format_time(0.0042), Quantity::Time) == Approx(0.0042));
}
