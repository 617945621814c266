// A process-wide cache of what a bound derives from a model's weights (the
// first-order bound's double matrices, the enclosure's matrix norms), one
// entry per model and key. An entry belongs to the model's weights, which
// copies of a Model share (Model::identity()): it is found again only for
// that model, and dropped once the model is gone, so a model loaded later
// at the same address never sees another's entry.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::model {

template <class Key, class T>
class PerModelCache {
 public:
  // The entry of (m, key), made by `make()` (under the cache's lock) when
  // absent. The reference lives as long as m.
  template <class Make>
  const T& get(const Model& m, const Key& key, Make make) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(entries_, [](const Entry& e) { return e.owner.expired(); });
    const std::weak_ptr<const void> owner = m.identity();
    for (const Entry& e : entries_) {
      if (e.key == key && !e.owner.owner_before(owner) && !owner.owner_before(e.owner)) {
        return *e.value;
      }
    }
    entries_.push_back({owner, key, std::make_unique<T>(make())});
    return *entries_.back().value;
  }

 private:
  struct Entry {
    std::weak_ptr<const void> owner;
    Key key;
    std::unique_ptr<T> value;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace fplab::model
