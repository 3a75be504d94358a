#include "runtime/new_shape_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace parley::runtime {
namespace {

using namespace std::chrono_literals;

TEST(NewShapeGate, ANewShapeRunsAloneUntilARunOfItSucceeds) {
  NewShapeGate gate;
  {
    auto pass = gate.enter("[[1, 80, 200]]");
    EXPECT_TRUE(pass.alone());  // and the run fails: the shape stays new
  }
  EXPECT_FALSE(gate.seen("[[1, 80, 200]]"));
  {
    auto pass = gate.enter("[[1, 80, 200]]");
    EXPECT_TRUE(pass.alone());
    pass.succeeded();
  }
  EXPECT_TRUE(gate.seen("[[1, 80, 200]]"));
  auto pass = gate.enter("[[1, 80, 200]]");
  EXPECT_FALSE(pass.alone());
}

// Threads running one session (runtime/session_share.h) may meet a new shape at once: the first
// chooses the kernels alone, the others then run beside the rest.
TEST(NewShapeGate, ARunThatWaitedForTheSameNewShapeDoesNotRunAlone) {
  NewShapeGate gate;
  std::optional<NewShapeGate::Pass> first(gate.enter("[[12]]"));
  ASSERT_TRUE(first->alone());
  std::atomic<bool> entered{false};
  std::atomic<bool> second_alone{true};
  std::thread second([&] {
    auto pass = gate.enter("[[12]]");
    second_alone = pass.alone();
    entered = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(entered) << "a run of the shape went while its first run chose the kernels";
  first->succeeded();
  first.reset();
  second.join();
  EXPECT_TRUE(entered);
  EXPECT_FALSE(second_alone) << "the shape was seen by the time the second run went";
}

TEST(NewShapeGate, RunsOfSeenShapesGoSideBySide) {
  NewShapeGate first;
  NewShapeGate second;
  for (auto* gate : {&first, &second}) {
    auto pass = gate->enter("[[4]]");
    pass.succeeded();
  }
  auto running = first.enter("[[4]]");
  std::atomic<bool> entered{false};
  std::thread other([&] {
    auto pass = second.enter("[[4]]");
    entered = true;
  });
  other.join();  // would never return if shared passes excluded each other
  EXPECT_TRUE(entered);
}

TEST(NewShapeGate, ANewShapeOfOneSessionWaitsForEveryRunOfAnyOther) {
  NewShapeGate seen_session;
  NewShapeGate new_session;
  {
    auto pass = seen_session.enter("[[4]]");
    pass.succeeded();
  }
  std::optional<NewShapeGate::Pass> running(seen_session.enter("[[4]]"));
  ASSERT_FALSE(running->alone());
  std::atomic<bool> new_shape_started{false};
  std::thread tuning([&] {
    auto pass = new_session.enter("[[8]]");
    new_shape_started = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(new_shape_started) << "a new shape ran while another session's run was under way";
  running.reset();
  tuning.join();
  EXPECT_TRUE(new_shape_started);
}

TEST(NewShapeGate, RunsWaitWhileANewShapeRuns) {
  NewShapeGate tuning_session;
  NewShapeGate other_session;
  {
    auto pass = other_session.enter("[[4]]");
    pass.succeeded();
  }
  std::optional<NewShapeGate::Pass> tuning(tuning_session.enter("[[8]]"));
  ASSERT_TRUE(tuning->alone());
  std::atomic<bool> run_started{false};
  std::thread run([&] {
    auto pass = other_session.enter("[[4]]");
    run_started = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(run_started) << "a run went while another session chose kernels for a new shape";
  tuning.reset();
  run.join();
  EXPECT_TRUE(run_started);
}

// With each device's threads isolated from other threads' captures, a GPU's first runs hold
// back that GPU alone: the four GPUs of a host no longer queue behind each other's warm-up.
TEST(NewShapeGate, ANewShapeOnOneDeviceWaitsOnlyForThatDevicesRuns) {
  NewShapeGate first_gpu("cuda:0");
  NewShapeGate same_gpu("cuda:0");
  NewShapeGate other_gpu("cuda:1");
  for (auto* gate : {&first_gpu, &other_gpu}) {
    auto pass = gate->enter("[[4]]");
    pass.succeeded();
  }
  std::optional<NewShapeGate::Pass> tuning(same_gpu.enter("[[8]]"));
  ASSERT_TRUE(tuning->alone());

  std::atomic<bool> other_ran{false};
  std::thread other([&] {
    auto pass = other_gpu.enter("[[4]]");
    auto creating = NewShapeGate::while_creating_session("cuda:1");
    other_ran = true;
  });
  other.join();  // would never return if the devices shared one lock
  EXPECT_TRUE(other_ran);

  std::atomic<bool> same_ran{false};
  std::thread same([&] {
    auto pass = first_gpu.enter("[[4]]");
    same_ran = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(same_ran) << "a run went on the device whose new shape was choosing kernels";
  tuning.reset();
  same.join();
  EXPECT_TRUE(same_ran);
}

TEST(NewShapeGate, SessionCreationWaitsForANewShapesRunOnly) {
  NewShapeGate session;
  {
    auto pass = session.enter("[[4]]");
    pass.succeeded();
  }
  // Beside a run of a seen shape and another creation: several GPUs' engines load at once.
  {
    std::optional<NewShapeGate::Pass> running(session.enter("[[4]]"));
    auto other_creation = NewShapeGate::while_creating_session();
    std::atomic<bool> created{false};
    std::thread create([&] {
      auto creating = NewShapeGate::while_creating_session();
      created = true;
    });
    create.join();
    EXPECT_TRUE(created);
  }
  // Not while a new shape runs: its capture fails on another thread's allocation.
  std::optional<NewShapeGate::Pass> tuning(session.enter("[[8]]"));
  ASSERT_TRUE(tuning->alone());
  std::atomic<bool> created{false};
  std::thread create([&] {
    auto creating = NewShapeGate::while_creating_session();
    created = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(created);
  tuning.reset();
  create.join();
  EXPECT_TRUE(created);
}

// A waiting writer goes before readers that come after it: otherwise, with sessions running
// back to back, a new shape could wait for as long as they keep running.
TEST(WriterFirstLock, AWaitingWriterGoesBeforeLaterReaders) {
  WriterFirstLock lock;
  std::optional<std::shared_lock<WriterFirstLock>> first_reader(std::in_place, lock);
  std::atomic<int> order{0};
  std::atomic<int> writer_turn{0};
  std::atomic<int> reader_turn{0};
  std::thread writer([&] {
    std::unique_lock<WriterFirstLock> hold(lock);
    writer_turn = ++order;
  });
  std::this_thread::sleep_for(100ms);  // the writer now waits for the first reader
  std::thread later_reader([&] {
    std::shared_lock<WriterFirstLock> hold(lock);
    reader_turn = ++order;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(order.load(), 0) << "someone went while the first reader held the lock";
  first_reader.reset();
  writer.join();
  later_reader.join();
  EXPECT_EQ(writer_turn.load(), 1);
  EXPECT_EQ(reader_turn.load(), 2);
}

TEST(WriterFirstLock, ReadersShareIt) {
  WriterFirstLock lock;
  std::shared_lock<WriterFirstLock> first(lock);
  std::atomic<bool> second_in{false};
  std::thread second([&] {
    std::shared_lock<WriterFirstLock> hold(lock);
    second_in = true;
  });
  second.join();
  EXPECT_TRUE(second_in);
}

}  // namespace
}  // namespace parley::runtime
