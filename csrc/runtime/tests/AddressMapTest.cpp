#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "runtime/AddressMap.h"

using npusim::runtime::AddressMap;

namespace {

void* address(uintptr_t n) { return reinterpret_cast<void*>(n); }

TEST(AddressMapTest, FindInsertErase) {
  AddressMap<int> map;
  int a = 1, b = 2;
  EXPECT_EQ(map.find(address(0x1000)), nullptr);
  map.insert(address(0x1000), &a);
  map.insert(address(0x1200), &b);
  EXPECT_EQ(map.find(address(0x1000)), &a);
  EXPECT_EQ(map.find(address(0x1200)), &b);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.erase(address(0x1000)), &a);
  EXPECT_EQ(map.erase(address(0x1000)), nullptr);  // already gone
  EXPECT_EQ(map.find(address(0x1000)), nullptr);
  EXPECT_EQ(map.find(address(0x1200)), &b);
  EXPECT_EQ(map.size(), 1u);
}

// Random inserts and erases, including keys that collide in the table, agree
// with std::unordered_map throughout growth and backward-shift deletion.
TEST(AddressMapTest, AgreesWithUnorderedMapUnderChurn) {
  AddressMap<int> map;
  std::unordered_map<const void*, int*> reference;
  std::vector<int> values(1);
  std::mt19937_64 random(7);
  std::vector<const void*> live;
  for (int step = 0; step < 200000; ++step) {
    const bool insert = live.empty() || random() % 100 < (step < 100000 ? 60 : 40);
    if (insert) {
      // 512-byte aligned, as allocations are; a narrow range makes probe runs long.
      const void* key = address((1 + random() % 20000) * 512);
      if (reference.count(key)) continue;
      map.insert(key, &values[0]);
      reference.emplace(key, &values[0]);
      live.push_back(key);
    } else {
      const size_t index = random() % live.size();
      const void* key = live[index];
      live[index] = live.back();
      live.pop_back();
      ASSERT_EQ(map.erase(key), reference.at(key));
      reference.erase(key);
    }
    if (step % 997 == 0) {
      ASSERT_EQ(map.size(), reference.size());
      for (const void* key : live) ASSERT_EQ(map.find(key), reference.at(key));
      ASSERT_EQ(map.find(address(0x7)), nullptr);
    }
  }
  for (const void* key : live) ASSERT_EQ(map.erase(key), &values[0]);
  EXPECT_EQ(map.size(), 0u);
}

}  // namespace
