// The swap policy's device-free parts under engine/src/swap/, white-box: the last iteration as the
// oracle (next uses and items reaching every buffer, wrapping into the next iteration; allocations
// ahead), buffer names across boundaries, and the work items still being issued (touched, reached
// by this thread or another).
#include <catch2/catch.hpp>

#include <map>
#include <thread>

#include "swap/buffer_names.hpp"
#include "swap/in_flight.hpp"
#include "swap/oracle.hpp"

using namespace memtool::engine;
using detail::Birth;

TEST_CASE("swap oracle: next uses from the last iteration, allocations ahead", "[engine][swap]") {
  detail::IterationOracle oracle;
  CHECK(oracle.next_use(7, 0) == detail::IterationOracle::kNever);  // no iteration yet
  oracle.used(7, 2);
  oracle.used(7, 5);
  oracle.used(9, 4);
  oracle.allocated(1, 100);
  oracle.allocated(3, 50);
  oracle.allocated(3, 25);
  oracle.end_iteration(10);
  oracle.begin_iteration();
  oracle.used(7, 1);  // this iteration's: not read until its end
  CHECK(oracle.length() == 10);
  CHECK(oracle.next_use(7, 0) == 2);
  CHECK(oracle.next_use(7, 2) == 3);           // after item 2: item 5
  CHECK(oracle.next_use(7, 6) == 10 - 6 + 2);  // next iteration's first use
  CHECK(oracle.next_use(9, 4) == 10);
  CHECK(oracle.next_use(8, 0) == detail::IterationOracle::kNever);
  CHECK(oracle.upcoming_allocations(0, 1) == 100);
  CHECK(oracle.upcoming_allocations(1, 2) == 75);  // items (1, 3]
  CHECK(oracle.upcoming_allocations(0, 10) == 175);
  CHECK(oracle.upcoming_allocations(3, 5) == 0);
}

TEST_CASE("swap oracle: the next item reaching every buffer, from the last iteration", "[engine][swap]") {
  detail::IterationOracle oracle;
  oracle.reaches_all(3);
  CHECK(oracle.next_reaching_all(0) == detail::IterationOracle::kNever);  // no iteration yet
  oracle.reaches_all(7);
  oracle.end_iteration(10);
  oracle.begin_iteration();
  oracle.reaches_all(1);  // this iteration's: not read until its end
  CHECK(oracle.next_reaching_all(0) == 3);
  CHECK(oracle.next_reaching_all(3) == 4);           // after item 3: item 7
  CHECK(oracle.next_reaching_all(8) == 10 - 8 + 3);  // the next iteration's first
  oracle.end_iteration(10);
  oracle.begin_iteration();
  CHECK(oracle.next_reaching_all(0) == 1);
  oracle.end_iteration(10);  // an iteration with none
  CHECK(oracle.next_reaching_all(0) == detail::IterationOracle::kNever);
}

TEST_CASE("swap buffer names: ordinals resolve to live buffers, and age at each boundary", "[engine][swap]") {
  detail::BufferNames names;
  std::map<DevicePtr, detail::SwapBuffer> buffers;
  detail::SwapBuffer kept;  // from before the first iteration
  buffers.emplace(0x1000, kept);
  detail::SwapBuffer a;
  names.born(0x2000, a, 0);
  buffers.emplace(0x2000, a);
  CHECK(names.resolve(detail::BufferName{Birth::current, 0}, buffers) == 0x2000);
  CHECK(names.resolve(detail::BufferName{Birth::persistent, 0x1000}, buffers) == 0x1000);
  CHECK(names.resolve(detail::BufferName{Birth::previous, 0}, buffers) == 0);
  CHECK(detail::BufferNames::key_of(0x2000, buffers.at(0x2000)) == 0);
  CHECK(detail::BufferNames::key_of(0x1000, buffers.at(0x1000)) != 0x1000);  // marked: never an ordinal
  names.next_iteration(buffers);
  CHECK(buffers.at(0x2000).birth == Birth::previous);
  CHECK(names.resolve(detail::BufferName{Birth::previous, 0}, buffers) == 0x2000);
  CHECK(names.resolve(detail::BufferName{Birth::current, 0}, buffers) == 0);
  names.forget(0x2000, buffers.at(0x2000));
  CHECK(names.resolve(detail::BufferName{Birth::previous, 0}, buffers) == 0);
  names.next_iteration(buffers);
  CHECK(buffers.at(0x2000).birth == Birth::persistent);
}

TEST_CASE("swap in-flight items: touched stays, reached by this thread may leave at once", "[engine][swap]") {
  using Issuing = detail::InFlightItems::Issuing;
  detail::InFlightItems items;
  detail::InFlight& mine = items.begin(3);
  mine.bases.push_back(0x10);
  mine.reached.push_back(0x20);
  CHECK(items.issuing(0x10) == Issuing::touched);
  CHECK(items.issuing(0x20) == Issuing::reached);
  CHECK(items.issuing(0x30) == Issuing::no);
  REQUIRE(items.mine() != nullptr);
  CHECK(items.mine()->stream == 3);
  // Another thread sees this thread's reached buffer as touched: the item may be queued any time.
  Issuing seen = Issuing::no;
  std::thread([&] { seen = items.issuing(0x20); }).join();
  CHECK(seen == Issuing::touched);
  items.queued();
  CHECK(items.mine() == nullptr);
  CHECK(items.issuing(0x10) == Issuing::no);
}
